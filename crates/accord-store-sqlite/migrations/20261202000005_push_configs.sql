-- Push notification configs, and where each one's delivery stands.
--
-- The outbox is the task's log (`task_events`): a config's pending updates are the entries after
-- its cursor (`delivered`). A config goes with its task (`ON DELETE CASCADE`: retention's purge).
-- Times are milliseconds since the Unix epoch.

CREATE TABLE push_configs (
    task_id         TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    id              TEXT    NOT NULL,
    -- The config (URL, token, credentials) sealed by the server's push key, stored as given.
    sealed          BLOB    NOT NULL,
    created_at      INTEGER NOT NULL,
    -- The cursor: the last log sequence delivered (or given up on).
    delivered       INTEGER NOT NULL,
    -- A copy of the task's `last_sequence`, kept by the trigger below, so that whether a config
    -- has anything to deliver (`delivered < latest`) is a fact of its own row, which an index can
    -- hold.
    latest          INTEGER NOT NULL,
    -- Failed attempts at the entry after the cursor.
    attempts        INTEGER NOT NULL,
    -- When the config may be taken again.
    next_attempt_at INTEGER NOT NULL,
    -- The delivery lease: the worker delivering it, and until when. Both or neither.
    lease_worker    TEXT,
    lease_until     INTEGER,
    CHECK ((lease_worker IS NULL) = (lease_until IS NULL)),
    PRIMARY KEY (task_id, id)
) STRICT, WITHOUT ROWID;

-- Claiming deliveries: only the configs with something to deliver, longest-waiting first. Configs
-- that are up to date with their task's log are not in it, however many there are.
CREATE INDEX push_configs_pending ON push_configs (next_attempt_at, task_id, id) WHERE delivered < latest;

-- Every entry appended to a task's log makes its configs' deliveries pending again: the copy of
-- the latest sequence follows the task's, in the transaction of the change. A task without
-- configs costs one lookup in the primary key, which finds nothing.
CREATE TRIGGER push_configs_follow_log AFTER UPDATE OF last_sequence ON tasks
WHEN NEW.last_sequence IS NOT OLD.last_sequence
BEGIN
    UPDATE push_configs SET latest = NEW.last_sequence WHERE task_id = NEW.id;
END;
