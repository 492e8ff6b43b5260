-- A finished task is kept once. Its log already carries its status message, result, artifacts and
-- history in full; when the log rebuilds exactly those, the `task` column keeps the task without
-- them (`body_in_log = 1`) and readers rebuild them from `task_events`. Its payload's input goes
-- too (`null`): a finished task never runs again. Tasks that ended before this migration keep
-- their whole task until they next change.

ALTER TABLE tasks ADD COLUMN body_in_log INTEGER NOT NULL DEFAULT 0 CHECK (body_in_log IN (0, 1));
