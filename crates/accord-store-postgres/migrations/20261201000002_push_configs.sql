-- Push notifications: each task's webhook configs, and where their delivery stands.
--
-- The outbox is the task's log (`accord_task_events`): a config's cursor (`delivered`) is the
-- last log sequence delivered to it, so its pending updates are the entries after the cursor.
-- The config itself is sealed by the engine (URL, token and credentials encrypted) and stored as
-- given. Times are milliseconds since the Unix epoch, as in `accord_tasks`.

CREATE TABLE accord_push_configs (
    -- A task's configs go with the task (retention purges, and any other delete).
    task_id         TEXT COLLATE "C" NOT NULL REFERENCES accord_tasks (id) ON DELETE CASCADE,
    -- Bytewise collation: configs are listed by id the way the engine orders strings.
    id              TEXT COLLATE "C" NOT NULL,
    sealed          BYTEA NOT NULL,
    created_at      BIGINT NOT NULL,
    -- The cursor: the last log sequence delivered (or given up on).
    delivered       BIGINT NOT NULL,
    -- A copy of the task's `last_sequence`, kept by the trigger below: `delivered <
    -- task_sequence` says that the config has updates to deliver, from its own row, so that the
    -- configs with something pending are found through a partial index instead of a scan of
    -- every config joined to its task.
    task_sequence   BIGINT NOT NULL,
    -- Failed attempts at the entry after the cursor.
    attempts        BIGINT NOT NULL DEFAULT 0,
    -- When the config may be taken again.
    next_attempt_at BIGINT NOT NULL,
    -- The worker delivering it, and until when.
    lease_worker    TEXT,
    lease_until     BIGINT,
    PRIMARY KEY (task_id, id),
    CONSTRAINT accord_push_configs_lease_is_whole CHECK ((lease_worker IS NULL) = (lease_until IS NULL))
);

-- `claim_push_deliveries`: only the configs with updates to deliver, longest waiting first. A
-- config that has caught up with its task's log leaves the index, so claims cost what is
-- pending, not what is kept.
CREATE INDEX accord_push_configs_due ON accord_push_configs (next_attempt_at, task_id, id)
    WHERE delivered < task_sequence;

-- Keeps `task_sequence` equal to the task's `last_sequence` whatever writes the log, including a
-- worker of a release that knows nothing of push configs. It runs in the transaction that
-- appends, under the task's row lock, so a claim sees the entries and the copy together.
CREATE FUNCTION accord_push_configs_follow_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE accord_push_configs SET task_sequence = NEW.last_sequence
        WHERE task_id = NEW.id AND task_sequence < NEW.last_sequence;
    RETURN NULL;
END
$$;

CREATE TRIGGER accord_tasks_push_follow_log
    AFTER UPDATE OF last_sequence ON accord_tasks
    FOR EACH ROW WHEN (NEW.last_sequence > OLD.last_sequence)
    EXECUTE FUNCTION accord_push_configs_follow_log();
