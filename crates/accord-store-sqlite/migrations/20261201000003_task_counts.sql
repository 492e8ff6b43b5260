-- How many tasks each owner has in each state, kept by triggers in the transaction of every change,
-- so that a list's total over all of an owner's tasks (or those in some states) is a sum of a few
-- rows instead of a count of every task the owner has.

CREATE TABLE task_counts (
    owner_hash TEXT    NOT NULL,
    state      TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (owner_hash, state)
) STRICT, WITHOUT ROWID;

INSERT INTO task_counts (owner_hash, state, n)
SELECT owner_hash, state, COUNT(*) FROM tasks GROUP BY owner_hash, state;

CREATE TRIGGER task_counts_after_insert AFTER INSERT ON tasks
BEGIN
    INSERT INTO task_counts (owner_hash, state, n) VALUES (NEW.owner_hash, NEW.state, 1)
    ON CONFLICT (owner_hash, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER task_counts_after_delete AFTER DELETE ON tasks
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE owner_hash = OLD.owner_hash AND state = OLD.state;
END;

CREATE TRIGGER task_counts_after_update AFTER UPDATE OF owner_hash, state ON tasks
WHEN OLD.owner_hash IS NOT NEW.owner_hash OR OLD.state IS NOT NEW.state
BEGIN
    UPDATE task_counts SET n = n - 1 WHERE owner_hash = OLD.owner_hash AND state = OLD.state;
    INSERT INTO task_counts (owner_hash, state, n) VALUES (NEW.owner_hash, NEW.state, 1)
    ON CONFLICT (owner_hash, state) DO UPDATE SET n = n + 1;
END;
