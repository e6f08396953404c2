-- The history of every attempt, and the dead-letter queue.

CREATE TABLE attempts (
    id               bigserial PRIMARY KEY,
    source           varchar(10) NOT NULL CHECK (source IN ('inbox', 'delivery')),
    source_id        uuid        NOT NULL,
    attempted_at     timestamptz NOT NULL DEFAULT now(),
    outcome          varchar(20) NOT NULL,   -- applied, noop, ignored, deferred, retry, dead, succeeded, failed
    duration_ms      double precision NOT NULL DEFAULT 0,
    status_code      integer,                -- deliveries: the HTTP status
    error            text,
    response_excerpt text,                   -- deliveries: the first bytes of the response
    worker_id        text
);

CREATE INDEX attempts_source ON attempts (source, source_id, id);

CREATE TABLE dead_letters (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source       varchar(10) NOT NULL CHECK (source IN ('inbox', 'delivery')),
    source_id    uuid        NOT NULL,
    reason       text        NOT NULL,
    attempts     integer     NOT NULL,
    last_error   text,
    dead_at      timestamptz NOT NULL DEFAULT now(),
    replayed_at  timestamptz,
    replay_count integer     NOT NULL DEFAULT 0
);

-- At most one open DLQ entry per source row.
CREATE UNIQUE INDEX dead_letters_open ON dead_letters (source, source_id) WHERE replayed_at IS NULL;
CREATE INDEX dead_letters_dead_at ON dead_letters (dead_at);
