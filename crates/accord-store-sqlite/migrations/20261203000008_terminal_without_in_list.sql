-- `terminal` computed by comparisons instead of `state IN (…)`. SQLite evaluates an IN of more than
-- two constants through a temporary B-tree, which it built at every insert into `tasks` and twice at
-- every update of it (the partial index `tasks_finished` reads the old and the new value). A
-- generated column cannot be altered, so it is dropped with the index that reads it and added
-- again; being virtual, it stores nothing.

DROP INDEX tasks_finished;
ALTER TABLE tasks DROP COLUMN terminal;
ALTER TABLE tasks ADD COLUMN terminal INTEGER NOT NULL
    GENERATED ALWAYS AS (state = 'completed' OR state = 'failed' OR state = 'canceled' OR state = 'rejected') VIRTUAL;
CREATE INDEX tasks_finished ON tasks (updated_at) WHERE terminal = 1;
