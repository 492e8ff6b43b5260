-- Task records and their event logs.
--
-- `task` holds the whole serialized engine `Task` (state, status message, result or error,
-- artifacts, history, metadata, version); the scalar columns beside it copy what queries filter
-- and sort on, and are written in the same statement as the JSON, so they never disagree.
-- Times are milliseconds since the Unix epoch.

CREATE TABLE tasks (
    id                   TEXT    NOT NULL PRIMARY KEY,
    -- SHA-256 of the owner's access token, 64 lowercase hex digits. Never the token itself.
    owner_hash           TEXT    NOT NULL,
    context_id           TEXT,
    state                TEXT    NOT NULL,
    terminal             INTEGER NOT NULL
        GENERATED ALWAYS AS (state IN ('completed', 'failed', 'canceled', 'rejected')) VIRTUAL,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    task                 TEXT    NOT NULL,
    -- The durable invocation payload (skill key + validated input): enough to run it again.
    payload              TEXT    NOT NULL,
    admission_expires_at INTEGER,
    lease_owner          TEXT,
    lease_expires_at     INTEGER,
    lease_phase          TEXT CHECK (lease_phase IN ('prepared', 'active')),
    -- The sequence number of the newest entry of the task's event log.
    last_sequence        INTEGER NOT NULL,
    -- A lease is all three lease columns or none of them.
    CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
    CHECK ((lease_owner IS NULL) = (lease_phase IS NULL))
) STRICT;

-- `list` by owner, newest first.
CREATE INDEX tasks_by_owner ON tasks (owner_hash, created_at DESC, id DESC);
-- Reaping abandoned reservations.
CREATE INDEX tasks_by_admission ON tasks (admission_expires_at) WHERE admission_expires_at IS NOT NULL;
-- Reaping lapsed prepared leases and recovering lapsed active ones.
CREATE INDEX tasks_by_lease ON tasks (lease_phase, lease_expires_at) WHERE lease_phase IS NOT NULL;
-- Capacity: counting the tasks that have not ended.
CREATE INDEX tasks_unfinished ON tasks (created_at) WHERE terminal = 0;
-- Retention: purging terminal tasks changed long ago.
CREATE INDEX tasks_finished ON tasks (updated_at) WHERE terminal = 1;

CREATE TABLE task_events (
    task_id  TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    -- The serialized engine `TaskEventKind`.
    kind     TEXT    NOT NULL,
    PRIMARY KEY (task_id, sequence)
) STRICT, WITHOUT ROWID;
