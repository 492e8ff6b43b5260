-- The Accord task store: task records with their execution leases, and their event logs.
--
-- Times are milliseconds since the Unix epoch (BIGINT), as the engine keeps them. The `task`
-- column holds the serialized `Task`; `state`, `context_id`, `created_at` and `updated_at` repeat
-- fields of it so that they can be filtered and indexed. Terminal states are completed, failed,
-- canceled and rejected; a terminal task never holds a lease or an admission expiry.

CREATE TABLE accord_tasks (
    -- Bytewise collation: `list` breaks ties by id the way the engine orders strings.
    id                   TEXT COLLATE "C" PRIMARY KEY,
    -- The SHA-256 of the owner's access token, 64 lowercase hex digits.
    owner_hash           TEXT NOT NULL,
    context_id           TEXT,
    state                TEXT NOT NULL CHECK (state IN (
                             'submitted', 'working', 'input_required', 'auth_required',
                             'completed', 'failed', 'canceled', 'rejected')),
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    task                 JSONB NOT NULL,
    -- The durable invocation payload: skill key and validated input.
    payload              JSONB NOT NULL,
    admission_expires_at BIGINT,
    lease_owner          TEXT,
    lease_expires_at     BIGINT,
    lease_phase          TEXT CHECK (lease_phase IN ('prepared', 'active')),
    -- The sequence number of the last entry of the task's event log.
    last_sequence        BIGINT NOT NULL,
    CONSTRAINT accord_tasks_lease_is_whole CHECK (
        (lease_owner IS NULL) = (lease_expires_at IS NULL)
        AND (lease_owner IS NULL) = (lease_phase IS NULL))
);

CREATE TABLE accord_task_events (
    task_id  TEXT COLLATE "C" NOT NULL REFERENCES accord_tasks (id) ON DELETE CASCADE,
    sequence BIGINT NOT NULL,
    at       BIGINT NOT NULL,
    kind     JSONB NOT NULL,
    PRIMARY KEY (task_id, sequence)
);

-- `list`: an owner's tasks newest first, optionally of one context.
CREATE INDEX accord_tasks_owner_created ON accord_tasks (owner_hash, created_at DESC, id DESC);
CREATE INDEX accord_tasks_owner_context_created
    ON accord_tasks (owner_hash, context_id, created_at DESC, id DESC)
    WHERE context_id IS NOT NULL;

-- Reaping abandoned reservations: an admission expiry without a lease.
CREATE INDEX accord_tasks_unclaimed_admission ON accord_tasks (admission_expires_at)
    WHERE lease_owner IS NULL
      AND admission_expires_at IS NOT NULL
      AND state NOT IN ('completed', 'failed', 'canceled', 'rejected');

-- Reaping lapsed prepared leases and recovering lapsed active ones.
CREATE INDEX accord_tasks_lease_expiry ON accord_tasks (lease_phase, lease_expires_at, id)
    WHERE lease_owner IS NOT NULL
      AND state NOT IN ('completed', 'failed', 'canceled', 'rejected');

-- Counting the tasks that are not terminal, for the optional capacity limit.
CREATE INDEX accord_tasks_not_terminal ON accord_tasks (created_at)
    WHERE state NOT IN ('completed', 'failed', 'canceled', 'rejected');

-- Purging terminal tasks past their retention.
CREATE INDEX accord_tasks_terminal_updated ON accord_tasks (updated_at)
    WHERE state IN ('completed', 'failed', 'canceled', 'rejected');
