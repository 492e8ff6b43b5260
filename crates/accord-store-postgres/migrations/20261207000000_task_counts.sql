-- How many tasks each owner has in each state, so that a list's total over all of an owner's
-- tasks, or over those in some states, is a sum of a few rows instead of a count of every task
-- the owner has (a count reads every matching index entry: seconds at a million tasks).
--
-- Several workers change tasks at once, so a count is not one row that every change updates:
-- each change would wait for the last one's commit. Instead every statement that changes tasks
-- adds signed changes to `accord_task_count_changes` (triggers, in the statement's transaction,
-- one row for each owner and state it moved), and the store folds those into
-- `accord_task_counts` in the background, one worker at a time. A total is the owner's folded
-- counts plus the changes not yet folded, read in one snapshot, so it is exact.

CREATE TABLE accord_task_counts (
    owner_hash TEXT NOT NULL,
    state      TEXT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (owner_hash, state)
);

-- Only ever inserted by the triggers and deleted by the fold, so it is mostly dead rows: the
-- store vacuums it after large folds, and autovacuum does not wait for it to grow. A vacuum never
-- truncates it: truncating takes a lock that the triggers of every write would wait for.
CREATE TABLE accord_task_count_changes (
    owner_hash TEXT NOT NULL,
    state      TEXT NOT NULL,
    n          BIGINT NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000,
        vacuum_truncate = false);
CREATE INDEX accord_task_count_changes_owner ON accord_task_count_changes (owner_hash, state);

-- No task changes between the triggers' creation and the count below, whatever writes it (a
-- worker of an older release included): it waits for this migration's commit.
LOCK TABLE accord_tasks IN SHARE ROW EXCLUSIVE MODE;

-- Creates and deletes are counted once per statement (a group of creates, a purge of 256 tasks),
-- from the statement's transition table.
CREATE FUNCTION accord_task_counts_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO accord_task_count_changes (owner_hash, state, n)
        SELECT owner_hash, state, count(*) FROM created GROUP BY owner_hash, state;
    RETURN NULL;
END
$$;

CREATE TRIGGER accord_tasks_count_created
    AFTER INSERT ON accord_tasks REFERENCING NEW TABLE AS created
    FOR EACH STATEMENT EXECUTE FUNCTION accord_task_counts_created();

CREATE FUNCTION accord_task_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO accord_task_count_changes (owner_hash, state, n)
        SELECT owner_hash, state, -count(*) FROM deleted GROUP BY owner_hash, state;
    RETURN NULL;
END
$$;

CREATE TRIGGER accord_tasks_count_deleted
    AFTER DELETE ON accord_tasks REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION accord_task_counts_deleted();

-- Updates are counted per row, and only when the state (or the owner) changes: most updates
-- move a lease, and PostgreSQL allows no column list on a trigger with transition tables.
CREATE FUNCTION accord_task_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO accord_task_count_changes (owner_hash, state, n)
        VALUES (OLD.owner_hash, OLD.state, -1), (NEW.owner_hash, NEW.state, 1);
    RETURN NULL;
END
$$;

CREATE TRIGGER accord_tasks_count_moved
    AFTER UPDATE OF owner_hash, state ON accord_tasks
    FOR EACH ROW WHEN (OLD.owner_hash IS DISTINCT FROM NEW.owner_hash OR OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION accord_task_counts_moved();

INSERT INTO accord_task_counts (owner_hash, state, n)
SELECT owner_hash, state, count(*) FROM accord_tasks GROUP BY owner_hash, state;
