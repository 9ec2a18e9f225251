// Command ferretdb-launcher runs FerretDB v1 (pinned in go.mod) as a MongoDB-wire server on a
// loopback address, for machines without mongod, and makes it honest about MongoDB's
// single-document semantics.
//
// It embeds github.com/FerretDB/FerretDB/ferretdb rather than installing FerretDB's own binary,
// because that binary panics at start without the version file its release build generates.
//
// Backend: PostgreSQL when one answers (database feeds_ferretdb by default, created if missing),
// otherwise SQLite files under -sqlite-dir.
//
// The front (front.go). FerretDB listens on an internal loopback port (-internal-listen, by
// default an ephemeral one); clients connect to the launcher's own MongoDB-wire front on -listen,
// which opens one FerretDB connection per client connection and passes every frame through in
// order (OP_MSG; OP_QUERY/OP_REPLY handshakes; moreToCome and exhaust replies). FerretDB v1 runs
// every update as an unlocked read and then a write (200 concurrent $inc on one document apply
// 18-84; 50 updates conditioned on {v: 0} modify 8-27 documents), so the front holds a lock from
// forwarding such a command until its reply has come back:
//
//	update         every statement's q pins one _id      -> those documents (*)
//	               otherwise (multi-document, a filter not pinning _id, an upsert whose
//	               filter is not the _id)                 -> the collection, exclusively
//	delete         every statement's q pins one _id      -> those documents (*)
//	               otherwise                             -> the collection, exclusively
//	findAndModify  query pins one _id                    -> that document (*)
//	               otherwise                             -> the collection, exclusively
//	everything else (find, aggregate, count, insert, getMore, index and collection commands,
//	handshakes): no lock
//
// (*) per db.collection + _id, taken in sorted order under a shared hold of the collection lock.
// "Pins one _id": the filter has a top-level _id equal to a scalar or a plain document ({_id: x}
// or {_id: {$eq: x}}), whatever else it holds. The locks are in-process: two launchers on the
// same PostgreSQL database do not lock each other (private test launchers use databases of
// their own). An upsert (update with one upsert statement, findAndModify with upsert) that
// FerretDB answers with a duplicate key error (11000, command error or writeErrors) is sent once
// more, as MongoDB retries upserts that race on a unique key. At most -max-writes locked
// commands run inside FerretDB at once: FerretDB keeps its read's PostgreSQL connection while
// the write takes a second from the same pool (50), so as many concurrent updates as the pool
// holds deadlock it for good (seen with 50 clients straight on FerretDB's port).
//
// TTL indexes (ttl.go), which FerretDB refuses: the front strips expireAfterSeconds from
// createIndexes (FerretDB creates the plain index), records the spec in feeds_launcher.ttl_indexes
// and adds expireAfterSeconds back to listIndexes replies; every -ttl-period it deletes documents
// whose field is a date (or an array holding one) older than now - seconds, under the collection's
// exclusive lock like a client's delete (missing and non-date values never expire). Specs whose
// index is gone (dropIndexes, drop, dropDatabase) are dropped on the next sweep.
//
// buildInfo replies carry feedsLauncher (the hash of the sources the binary was built from, set
// by scripts/infra.mjs with -ldflags "-X main.sourcesHash=...": infra restarts a launcher of
// other sources) and feedsLauncherInternal (FerretDB's own address, for tests and benchmarks
// that bypass the front). The launcher prints the URL to hand out on stdout:
// mongodb://<listen>/?retryWrites=false (FerretDB v1 has no retryable writes).
//
// On PostgreSQL the launcher also keeps "companion" GIN indexes: FerretDB v1 pushes an equality
// filter down as `_jsonb->'field' @> value` (or `_jsonb #> '{a,b}' @> value` for a dotted path),
// which its own btree indexes on `(_jsonb->'field')` cannot serve. A GIN index on the same
// expression can. An event trigger adds one for every field of every btree index FerretDB
// creates, and a second one drops companions whose btree index is gone; existing indexes are
// backfilled at start. See companionsSQL below. (FerretDB's find and aggregate drop dotted keys
// from the pushed-down filter; update, delete and findAndModify keep them, hence the #> form.)
//
// The machinery lives in schema ferretdb_gin of the PostgreSQL database and serves every
// FerretDB on that database: -gin=false only skips installing it. To benchmark without the
// companions: SELECT ferretdb_gin.drop_all('<mongo db name>'); to bring them back:
// SELECT ferretdb_gin.sync_all('<mongo db name>'). To remove the machinery altogether:
// DROP EVENT TRIGGER ferretdb_gin_create_index, ferretdb_gin_drop_index; DROP SCHEMA ferretdb_gin CASCADE.
//
// Flags win over environment variables, which win over defaults:
//
//	-listen        FERRETDB_LISTEN_ADDR      127.0.0.1:27017 (the front; loopback only)
//	-internal-listen FERRETDB_INTERNAL_LISTEN_ADDR  ephemeral loopback port (FerretDB itself)
//	-backend       FERRETDB_BACKEND          auto | postgresql | sqlite (auto: PostgreSQL if it answers)
//	-postgresql-url FERRETDB_POSTGRESQL_URL  postgres://postgres@127.0.0.1:5432/feeds_ferretdb
//	-sqlite-dir    FERRETDB_SQLITE_DIR       ./ferretdb-sqlite
//	-gin           FERRETDB_GIN              true (false: neither install nor backfill companions)
//	-ttl-period    FERRETDB_TTL_PERIOD       5s (how often TTL indexes are applied; "1s", or seconds)
//	-max-writes    FERRETDB_MAX_WRITES       16 (locked commands inside FerretDB at once)
//	-unsafe-no-locks FERRETDB_UNSAFE_NO_LOCKS false (lock nothing: shows what the locks are for)
//	-log-level     FERRETDB_LOG_LEVEL        warn (debug | info | warn | error)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/build/version"
	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// companionsSQL installs (idempotently) the companion GIN machinery in schema ferretdb_gin.
// FerretDB lists as MongoDB databases only the schemas holding its _ferretdb_database_metadata
// table, so this schema stays invisible to MongoDB clients.
const companionsSQL = `
CREATE SCHEMA IF NOT EXISTS ferretdb_gin;

-- Key path of one index column if it is FerretDB's (_jsonb -> 'k1' [-> 'k2' ...]) form, else NULL.
-- expr is pg_get_indexdef(index, column, false), e.g. ((_jsonb -> 'a'::text) -> 'b'::text).
CREATE OR REPLACE FUNCTION ferretdb_gin.column_path(expr text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  m text[];
  path text[] := '{}';
BEGIN
  IF expr IS NULL OR expr !~ $re$^\(*_jsonb( -> '(?:[^']|'')*'::text\)*)+$$re$ THEN
    RETURN NULL;
  END IF;
  FOR m IN SELECT regexp_matches(expr, $re$'((?:[^']|'')*)'::text$re$, 'g') LOOP
    path := path || replace(m[1], '''''', '''');
  END LOOP;
  RETURN path;
END
$fn$;

-- Expression FerretDB's filter pushdown uses for a path: _jsonb->'k' for one key,
-- _jsonb #> '{a,b}' for a dotted path (the planner matches an index only on the same form).
CREATE OR REPLACE FUNCTION ferretdb_gin.path_expr(path text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN cardinality(path) = 1
    THEN format('(_jsonb -> %L::text)', path[1])
    ELSE format('(_jsonb #> %L::text[])', path::text) END
$fn$;

-- Deterministic companion name: readable prefix + hash, always ending in _fgin and under 63
-- bytes (FerretDB's own index names end in _idx, so they never collide).
CREATE OR REPLACE FUNCTION ferretdb_gin.companion_name(tbl text, path text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT left(regexp_replace(tbl, '[^a-zA-Z0-9_]', '', 'g'), 28) || '_'
      || left(regexp_replace(array_to_string(path, '_'), '[^a-zA-Z0-9_]', '', 'g'), 16) || '_'
      || left(md5(tbl || '/' || path::text), 8) || '_fgin'
$fn$;

-- True for a FerretDB collection table (has a jsonb _jsonb column; not its metadata table).
CREATE OR REPLACE FUNCTION ferretdb_gin.is_collection(tbl regclass) RETURNS boolean
LANGUAGE sql STABLE AS $fn$
  SELECT c.relkind = 'r' AND c.relname <> '_ferretdb_database_metadata'
     AND n.nspname NOT IN ('ferretdb_gin', 'pg_catalog', 'information_schema')
     AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = '_jsonb'
                 AND a.atttypid = 'jsonb'::regtype AND NOT a.attisdropped)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl
$fn$;

-- Companions tbl should have: one per distinct key path among its btree indexes' columns.
CREATE OR REPLACE FUNCTION ferretdb_gin.wanted(tbl regclass) RETURNS TABLE (name text, path text[])
LANGUAGE sql STABLE AS $fn$
  SELECT DISTINCT ON (1) ferretdb_gin.companion_name(c.relname, s.p), s.p
  FROM pg_class c
  CROSS JOIN LATERAL (
    SELECT ferretdb_gin.column_path(pg_get_indexdef(i.indexrelid, k, false)) AS p
    FROM pg_index i
    JOIN pg_class ic ON ic.oid = i.indexrelid
    JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
    CROSS JOIN LATERAL generate_series(1, i.indnkeyatts) AS k
    WHERE i.indrelid = c.oid AND i.indkey[k - 1] = 0   -- expression columns only
  ) s
  WHERE c.oid = tbl AND s.p IS NOT NULL
$fn$;

-- Brings tbl's companions in line with its btree indexes: creates missing ones (do_create) and
-- drops those whose field no btree index covers any more (do_drop). Returns indexes changed.
CREATE OR REPLACE FUNCTION ferretdb_gin.sync(tbl regclass, do_create boolean, do_drop boolean)
RETURNS integer LANGUAGE plpgsql AS $fn$
DECLARE
  nsp text;
  rel text;
  r record;
  changed integer := 0;
BEGIN
  IF NOT coalesce(ferretdb_gin.is_collection(tbl), false) THEN
    RETURN 0;
  END IF;
  SELECT n.nspname, c.relname INTO nsp, rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;

  IF do_create THEN
    FOR r IN SELECT w.name, w.path FROM ferretdb_gin.wanted(tbl) w
             WHERE NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
                               WHERE i.indrelid = tbl AND ic.relname = w.name) LOOP
      EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I USING gin (%s)',
                     r.name, nsp, rel, ferretdb_gin.path_expr(r.path));
      changed := changed + 1;
    END LOOP;
  END IF;

  IF do_drop THEN
    FOR r IN SELECT ic.relname AS name
             FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
             WHERE i.indrelid = tbl AND ic.relname LIKE '%\_fgin'
               AND ic.relname NOT IN (SELECT w.name FROM ferretdb_gin.wanted(tbl) w) LOOP
      EXECUTE format('DROP INDEX IF EXISTS %I.%I', nsp, r.name);
      changed := changed + 1;
    END LOOP;
  END IF;

  RETURN changed;
END
$fn$;

-- Backfill: syncs every FerretDB collection table (all schemas, or only schema nsp).
CREATE OR REPLACE FUNCTION ferretdb_gin.sync_all(nsp text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  t regclass;
  changed integer := 0;
BEGIN
  FOR t IN SELECT c.oid::regclass FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind = 'r' AND (nsp IS NULL OR n.nspname = nsp) LOOP
    changed := changed + ferretdb_gin.sync(t, true, true);
  END LOOP;
  RETURN changed;
END
$fn$;

-- Drops every companion in schema nsp (or everywhere), e.g. to benchmark without them;
-- SELECT ferretdb_gin.sync_all(nsp) puts them back. Returns indexes dropped.
CREATE OR REPLACE FUNCTION ferretdb_gin.drop_all(nsp text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
  changed integer := 0;
BEGIN
  FOR r IN SELECT n.nspname, ic.relname FROM pg_index i
           JOIN pg_class ic ON ic.oid = i.indexrelid
           JOIN pg_namespace n ON n.oid = ic.relnamespace
           JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'gin'
           WHERE ic.relname LIKE '%\_fgin' AND (nsp IS NULL OR n.nspname = nsp) LOOP
    EXECUTE format('DROP INDEX IF EXISTS %I.%I', r.nspname, r.relname);
    changed := changed + 1;
  END LOOP;
  RETURN changed;
END
$fn$;

-- ddl_command_end on CREATE INDEX: a new btree index gets its companions.
-- The companion's own CREATE INDEX fires this again; it is a gin index, so sync adds nothing.
CREATE OR REPLACE FUNCTION ferretdb_gin.on_create_index() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  t regclass;
BEGIN
  FOR t IN SELECT DISTINCT i.indrelid::regclass
           FROM pg_event_trigger_ddl_commands() cmd
           JOIN pg_index i ON i.indexrelid = cmd.objid
           JOIN pg_class ic ON ic.oid = i.indexrelid
           JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
           WHERE cmd.object_type = 'index' LOOP
    PERFORM ferretdb_gin.sync(t, true, false);
  END LOOP;
END
$fn$;

-- sql_drop on DROP INDEX (FerretDB's dropIndexes): drop companions left without a btree index.
-- The dropped index's table is already unknown here, so every table of its schema is checked.
CREATE OR REPLACE FUNCTION ferretdb_gin.on_drop_index() RETURNS event_trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  t regclass;
BEGIN
  FOR t IN SELECT c.oid::regclass FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind = 'r' AND n.nspname IN (
             SELECT d.schema_name FROM pg_event_trigger_dropped_objects() d
             WHERE d.object_type = 'index' AND d.object_name NOT LIKE '%\_fgin') LOOP
    PERFORM ferretdb_gin.sync(t, false, true);
  END LOOP;
END
$fn$;

DO $do$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'ferretdb_gin_create_index') THEN
    CREATE EVENT TRIGGER ferretdb_gin_create_index ON ddl_command_end
      WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION ferretdb_gin.on_create_index();
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'ferretdb_gin_drop_index') THEN
    CREATE EVENT TRIGGER ferretdb_gin_drop_index ON sql_drop
      WHEN TAG IN ('DROP INDEX') EXECUTE FUNCTION ferretdb_gin.on_drop_index();
  END IF;
END
$do$;
ALTER EVENT TRIGGER ferretdb_gin_create_index ENABLE;
ALTER EVENT TRIGGER ferretdb_gin_drop_index ENABLE;
`

// Arbitrary advisory-lock key that serialises concurrent launchers installing companionsSQL.
const installLockKey = 7270451901

func main() {
	listen := flag.String("listen", env("FERRETDB_LISTEN_ADDR", "127.0.0.1:27017"), "where clients connect: the launcher's MongoDB-wire front (loopback only)")
	internalListen := flag.String("internal-listen", env("FERRETDB_INTERNAL_LISTEN_ADDR", ""), "FerretDB's own address behind the front (loopback only; empty: an ephemeral port)")
	backend := flag.String("backend", env("FERRETDB_BACKEND", "auto"), "auto, postgresql or sqlite")
	pgURL := flag.String("postgresql-url", env("FERRETDB_POSTGRESQL_URL", "postgres://postgres@127.0.0.1:5432/feeds_ferretdb"), "PostgreSQL URL; its database is created if missing")
	sqliteDir := flag.String("sqlite-dir", env("FERRETDB_SQLITE_DIR", "ferretdb-sqlite"), "folder for SQLite files (sqlite backend)")
	gin := flag.Bool("gin", envBool("FERRETDB_GIN", true), "install and backfill companion GIN indexes (postgresql backend)")
	ttlPeriod := flag.Duration("ttl-period", envDuration("FERRETDB_TTL_PERIOD", 5*time.Second), "how often TTL indexes are applied")
	maxWrites := flag.Int("max-writes", envInt("FERRETDB_MAX_WRITES", 16), "read-then-write commands (update, delete, findAndModify) inside FerretDB at once; keep under half its PostgreSQL pool (pool_max_conns, 50)")
	noLocks := flag.Bool("unsafe-no-locks", envBool("FERRETDB_UNSAFE_NO_LOCKS", false), "the front locks nothing (FerretDB's races come back; only to show what the locks are for)")
	logLevel := flag.String("log-level", env("FERRETDB_LOG_LEVEL", "warn"), "debug, info, warn or error")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fatal("bad -log-level %q", *logLevel)
	}
	logger := slog.New(demoteHandler{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})})
	slog.SetDefault(logger)

	if err := checkLoopback("-listen", *listen); err != nil {
		fatal("%v", err)
	}
	if *internalListen != "" {
		if err := checkLoopback("-internal-listen", *internalListen); err != nil {
			fatal("%v", err)
		}
	}
	if *maxWrites < 1 {
		fatal("bad -max-writes %d", *maxWrites)
	}
	if *ttlPeriod <= 0 {
		fatal("bad -ttl-period %v", *ttlPeriod)
	}

	// The front's port first: "address in use" fails before any backend work.
	frontLn, err := net.Listen("tcp", *listen)
	if err != nil {
		fatal("listen: %v", err)
	}
	if *internalListen == "" {
		if *internalListen, err = ephemeralAddr(); err != nil {
			fatal("internal port: %v", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := &ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: *internalListen},
		Logger:   logger,
	}

	switch *backend {
	case "auto", "postgresql":
		err := preparePostgreSQL(ctx, *pgURL, *gin, logger)
		if err == nil {
			cfg.Handler, cfg.PostgreSQLURL = "postgresql", withIdleTimeout(*pgURL)
			break
		}
		// Only "nobody answers" falls back; a PostgreSQL that answers but fails is an error.
		if *backend == "postgresql" || !errors.Is(err, errUnreachable) {
			fatal("PostgreSQL: %v", err)
		}
		logger.Warn("PostgreSQL does not answer, using SQLite", "error", err, "dir", *sqliteDir)
		fallthrough
	case "sqlite":
		dir, err := filepath.Abs(*sqliteDir)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			fatal("SQLite folder: %v", err)
		}
		// FerretDB wants a file: URI naming a folder, with a trailing slash.
		cfg.Handler, cfg.SQLiteURL = "sqlite", "file:"+dir+"/"
	default:
		fatal("bad -backend %q", *backend)
	}

	// Embedded builds report "unknown"; report the pinned module version in buildInfo instead.
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "github.com/FerretDB/FerretDB" {
				version.Get().Version = dep.Version
			}
		}
	}

	// New binds the listener (so "address in use" fails here); telemetry is off in embedded mode.
	f, err := ferretdb.New(cfg)
	if err != nil {
		fatal("start: %v", err)
	}
	ferretErr := make(chan error, 1)
	go func() { ferretErr <- f.Run(ctx) }()

	locks := newLockTable()
	fr := &front{backend: *internalListen, locks: locks, noLocks: *noLocks, writes: make(chan struct{}, *maxWrites), logger: logger}
	if fr.ttl, err = newTTLManager(*internalListen, *listen, locks, fr.writes, *ttlPeriod, logger); err != nil {
		fatal("TTL: %v", err)
	}
	go fr.ttl.run(ctx)
	frontErr := make(chan error, 1)
	go func() { frontErr <- fr.serve(ctx, frontLn) }()

	// The URL to hand out: it carries FerretDB's quirks (no retryable writes) so clients need not.
	fmt.Printf("ferretdb-launcher: ready on mongodb://%s/?retryWrites=false (FerretDB %s, %s backend, internal %s, sources %s, TTL every %v%s)\n",
		*listen, version.Get().Version, cfg.Handler, *internalListen, sourcesHash, *ttlPeriod, map[bool]string{true: ", UNSAFE: no locks"}[*noLocks])
	logger.Info("FerretDB ready", "uri", f.MongoDBURI(), "backend", cfg.Handler)

	select {
	case err = <-ferretErr:
	case err = <-frontErr:
		stop()
	}
	if err != nil {
		fatal("run: %v", err)
	}
}

// sourcesHash names the launcher sources this binary was built from: infra.mjs sets it
// (-ldflags -X main.sourcesHash=...) and the front reports it in buildInfo as feedsLauncher.
var sourcesHash = "unknown"

// ephemeralAddr is a loopback address with a port the OS has just found free.
func ephemeralAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// errUnreachable marks a PostgreSQL that does not answer at all (the auto backend then uses SQLite).
var errUnreachable = errors.New("PostgreSQL unreachable")

// preparePostgreSQL checks that PostgreSQL answers, creates the database if missing and, unless
// gin is false, installs the companion-index triggers and backfills existing collections.
func preparePostgreSQL(ctx context.Context, url string, gin bool, logger *slog.Logger) error {
	cfg, err := pgx.ParseConfig(withoutPoolParams(url))
	if err != nil {
		return fmt.Errorf("bad URL: %w", err)
	}
	if cfg.Database == "" {
		return errors.New("URL names no database")
	}

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	// Connect to the maintenance database first: the target database may not exist yet.
	adminCfg := cfg.Copy()
	adminCfg.Database = "postgres"
	adminCfg.ConnectTimeout = 3 * time.Second
	admin, err := pgx.ConnectConfig(ctx, adminCfg)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) { // it answered, but refused (auth, missing role...)
			return err
		}
		return fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer admin.Close(context.Background())

	var exists bool
	if err = admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, cfg.Database).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{cfg.Database}.Sanitize())
		var pgErr *pgconn.PgError
		// 42P04 duplicate_database, 23505 unique_violation: another launcher created it meanwhile.
		if err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505")) {
			return fmt.Errorf("create database %s: %w", cfg.Database, err)
		}
		logger.Info("created PostgreSQL database", "database", cfg.Database)
	}

	if !gin {
		logger.Info("companion GIN indexes not installed (-gin=false)")
		return nil
	}

	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	// One transaction, serialised by an advisory lock: concurrent launchers would otherwise race
	// on CREATE OR REPLACE FUNCTION ("tuple concurrently updated").
	var changed int
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(installLockKey)); err != nil {
			return err
		}
		// Simple protocol: the script holds several statements.
		if _, err := tx.Exec(ctx, companionsSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("install companion GIN triggers: %w", err)
		}
		return tx.QueryRow(ctx, `SELECT ferretdb_gin.sync_all()`).Scan(&changed)
	})
	if err != nil {
		return err
	}
	logger.Info("companion GIN indexes in place", "backfilled", changed)
	return nil
}

// withoutPoolParams drops FerretDB's pool settings (pool_max_conns=...) from a PostgreSQL URL:
// pgx would send them to the server as run-time parameters.
func withoutPoolParams(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// withIdleTimeout asks FerretDB to close pooled PostgreSQL connections idle for a minute
// (pgx's default is 30 minutes: a launcher after a burst kept its 50 connections, and a few
// launchers filled PostgreSQL's 100). FerretDB v1 sets pool_max_conn_idle_time to 1m whenever
// the URL has it at all, whatever its value.
func withIdleTimeout(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	if !q.Has("pool_max_conn_idle_time") {
		q.Set("pool_max_conn_idle_time", "1m")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// checkLoopback refuses any listen address whose host is not a loopback address.
func checkLoopback(flagName, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad %s %q: %w", flagName, addr, err)
	}
	if _, err = strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("bad %s port %q", flagName, port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s %q: only loopback addresses are allowed", flagName, addr)
	}
	return nil
}

// demoteHandler turns FerretDB's routine complaints into info: it logs every non-ok reply (a
// duplicate key, the driver's unsupported endSessions) as a multi-line WARN dump, every client
// that drops its connection without a clean close as "Connection stopped", and each duplicate
// key (SQLSTATE 23505, how unique indexes answer) as an ERROR "Query" line.
type demoteHandler struct{ slog.Handler }

func (h demoteHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level == slog.LevelWarn && (strings.HasPrefix(r.Message, "Response ") ||
		strings.HasPrefix(r.Message, "Proxy response ") || r.Message == "Connection stopped"):
		r.Level = slog.LevelInfo
	case r.Level >= slog.LevelWarn && r.Message == "Query":
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" && strings.Contains(a.Value.String(), "SQLSTATE 23505") {
				r.Level = slog.LevelInfo
				return false
			}
			return true
		})
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoteHandler{h.Handler.WithAttrs(attrs)}
}

func (h demoteHandler) WithGroup(name string) slog.Handler {
	return demoteHandler{h.Handler.WithGroup(name)}
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envBool(name string, def bool) bool {
	v, err := strconv.ParseBool(strings.TrimSpace(os.Getenv(name)))
	if err != nil {
		return def
	}
	return v
}

func envInt(name string, def int) int {
	v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name)))
	if err != nil {
		return def
	}
	return v
}

// envDuration reads a duration ("5s", "500ms") or a number of seconds.
func envDuration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(os.Getenv(name))
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(n * float64(time.Second))
	}
	return def
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ferretdb-launcher: "+format+"\n", args...)
	os.Exit(1)
}
