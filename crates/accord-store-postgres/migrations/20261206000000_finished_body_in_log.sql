-- A finished task is kept once. Its log already carries its status message, result, artifacts and
-- history in full; when the log rebuilds exactly those, the `task` column keeps the task without
-- them (`body_in_log`) and readers rebuild them from `accord_task_events`. Its payload's input
-- goes too (`null`): a finished task never runs again. Tasks that ended before this migration keep
-- their whole task until they next change.
ALTER TABLE accord_tasks ADD COLUMN body_in_log BOOLEAN NOT NULL DEFAULT false;
