-- `list` filters by skill and by last change, and pages from a keyset cursor, all in SQL.

-- The task's skill, read from the task itself: a generated column, so that every row has it,
-- those stored before this migration (computed as the column is added) and those a worker of an
-- older release still writes.
ALTER TABLE accord_tasks ADD COLUMN skill TEXT GENERATED ALWAYS AS (task ->> 'skill') STORED;

-- `list` by skill, newest first (a cursor continues within the same index).
CREATE INDEX accord_tasks_owner_skill_created ON accord_tasks (owner_hash, skill, created_at DESC, id DESC);
-- `list` of the tasks changed at or after an instant.
CREATE INDEX accord_tasks_owner_updated ON accord_tasks (owner_hash, updated_at);
