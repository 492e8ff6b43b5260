-- The list indexes in ascending order. A page of a list still reads newest first (SQLite walks an
-- index backwards for `ORDER BY created_at DESC, id DESC`, with no sort), but a new task's entries
-- now go at the end of its owner's range instead of its start. Task ids are time ordered, so for
-- the owner whose range ends the index that end is the index's last page, which SQLite fills
-- whole before it starts the next; inserting at the start of a range split pages in two and
-- changed two or three of them each time. Fewer pages changed means fewer written to the log at
-- each commit.

DROP INDEX tasks_by_owner;
CREATE INDEX tasks_by_owner ON tasks (owner_hash, created_at, id);

DROP INDEX tasks_by_owner_skill;
CREATE INDEX tasks_by_owner_skill ON tasks (owner_hash, skill, created_at, id);

DROP INDEX tasks_by_owner_context;
CREATE INDEX tasks_by_owner_context ON tasks (owner_hash, context_id, created_at, id)
    WHERE context_id IS NOT NULL;
