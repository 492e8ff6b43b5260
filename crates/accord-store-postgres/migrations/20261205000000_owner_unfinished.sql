-- Each owner's unfinished tasks, counted on every create to enforce the per-owner share
-- (`RuntimeConfig::max_active_per_owner`) without reading the owner's terminal tasks.
CREATE INDEX accord_tasks_owner_unfinished ON accord_tasks (owner_hash)
    WHERE state NOT IN ('completed', 'failed', 'canceled', 'rejected');
