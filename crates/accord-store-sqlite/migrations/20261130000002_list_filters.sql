-- `list` filters by skill and by last change, and pages from a keyset cursor, all in SQL.

-- The task's skill, written with the record (it never changes). Tasks stored before this
-- migration take theirs from their task JSON.
ALTER TABLE tasks ADD COLUMN skill TEXT NOT NULL DEFAULT '';
UPDATE tasks SET skill = json_extract(task, '$.skill')
WHERE CASE WHEN json_valid(task) THEN json_type(task, '$.skill') = 'text' ELSE 0 END;

-- `list` by skill, and in a context, newest first (a cursor continues within the same index).
CREATE INDEX tasks_by_owner_skill ON tasks (owner_hash, skill, created_at DESC, id DESC);
CREATE INDEX tasks_by_owner_context ON tasks (owner_hash, context_id, created_at DESC, id DESC)
    WHERE context_id IS NOT NULL;
-- `list` of the tasks changed at or after an instant.
CREATE INDEX tasks_by_owner_updated ON tasks (owner_hash, updated_at);
