-- Capacity counts the unfinished tasks from `task_counts` now: the partial index that served the
-- count only cost every task two more index changes.
DROP INDEX tasks_unfinished;
