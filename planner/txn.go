package planner

// Transactions. Between BEGIN and COMMIT a session keeps its writes to
// itself: the rows it inserts (INSERT, COPY, the new versions of rows it
// updates) are pending records, the rows it deletes (and the old versions
// of rows it updates) are tombstones naming where each row is — a data
// file and a row number in it, a buffered batch and a row in it, or one of
// its own pending records. Its statements read every table it wrote
// through a view of the committed rows minus its tombstones plus its
// pending rows (txview.go), so it sees its own writes and nobody else
// does. COMMIT hands everything to ingest.Store.CommitTx: one WAL append,
// published at once. ROLLBACK forgets it; nothing was logged.
//
// A transaction that deletes or updates rows of a table holds the table's
// write lock from that statement to its end, so the rows its tombstones
// name stay where they are (no flush, compaction or other writer's
// DELETE/UPDATE of the table meanwhile). A second writer of the table
// waits; waits that would never end are deadlocks (40P01). Inserts do not
// lock: at COMMIT they are appended like any other rows.
//
// READ COMMITTED takes a snapshot per statement. REPEATABLE READ (and
// SERIALIZABLE, which runs as REPEATABLE READ) takes one of every table at
// its first statement; one that then deletes or updates rows of a table
// changed since (rows written, flushed or compacted) gets 40001.

import (
	"context"
	"fmt"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/dialect"
	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/membuffer"
)

// txn is a transaction: a block between BEGIN and its end, or the
// implicit one of a single statement that needs one (a DELETE or UPDATE
// with RETURNING, a join or a subquery).
type txn struct {
	id ingest.TxID
	// start is the block's start: now() and CURRENT_TIMESTAMP inside it
	// give this time, as PostgreSQL's transaction timestamp.
	start    time.Time
	iso      dialect.Isolation
	readOnly bool
	implicit bool
	failed   bool
	// queried is set once a statement other than SET ran: the dialect.Isolation
	// level may no longer change.
	queried bool
	// level tags every write; SAVEPOINT raises it, so ROLLBACK TO finds
	// the writes made after the savepoint by their tags.
	level int32
	saves []savepoint
	// tables are the tables the transaction wrote, by name.
	tables map[string]*txTable
	// unlocks release the table locks the transaction holds.
	unlocks map[string]func()
	// bytes is what the pending records and tombstones hold in memory.
	bytes int64

	// snaps are a REPEATABLE READ transaction's snapshots, taken at its
	// first statement; epoch keeps the mirrored batches they read.
	snaps  map[string]*ingest.Snapshot
	epoch  uint64
	pinned bool

	// before are the session's settings at BEGIN: ROLLBACK restores them.
	before map[string]string
	// local are the values SET LOCAL changed, as they were before it.
	local map[string]string
	// views are the session views made over the transaction's writes.
	views map[string]bool
	// functions are the functions the block created, in order: stored
	// at COMMIT.
	functions []txFunction
}

// savepoint is a SAVEPOINT: the level its writes start at and the
// settings to restore on ROLLBACK TO.
type savepoint struct {
	name     string
	mark     int32
	settings map[string]string
}

// tombstoneBytes is what a deleted row's number holds, tombRunBytes what a
// statement's run of them from one source holds besides.
const (
	tombstoneBytes = 8
	tombRunBytes   = 64
)

// InTransaction reports whether the client opened a transaction block
// (reported in ReadyForQuery).
func (s *Session) InTransaction() bool { return s.tx != nil }

// TransactionFailed reports whether the transaction block had an error:
// until ROLLBACK (or ROLLBACK TO a savepoint), statements are refused.
func (s *Session) TransactionFailed() bool { return s.tx != nil && s.tx.failed }

// FailTransaction marks the transaction block, if any, failed. The wire
// layer calls it for every error it reports (an error may come while rows
// stream, after the statement started).
func (s *Session) FailTransaction() {
	if s.tx != nil {
		s.tx.failed = true
	}
}

// newTx starts a transaction with the session's default dialect.Isolation.
func (s *Session) newTx(implicit bool) *txn {
	iso, _ := dialect.ParseIsolation(s.settings.Get("default_transaction_isolation"))
	return &txn{
		id: ingest.TxID(s.p.txSeq.Add(1)), iso: iso, implicit: implicit, start: time.Now(),
		readOnly: strings.EqualFold(s.settings.Get("default_transaction_read_only"), "on"),
		tables:   map[string]*txTable{}, unlocks: map[string]func(){}, views: map[string]bool{},
	}
}

// begin opens a transaction block (BEGIN, START TRANSACTION).
func (s *Session) begin(t *pg_query.TransactionStmt) (*Result, error) {
	if s.tx != nil {
		return &Result{Tag: "BEGIN", Warning: &sqlerr.Error{Code: sqlerr.ActiveSQLTransaction, Message: "there is already a transaction in progress"}}, nil
	}
	tx := s.newTx(false)
	if err := tx.setModes(t.Options); err != nil {
		return nil, err
	}
	tx.before = s.settings.Snapshot()
	s.tx = tx
	s.syncIsolationSetting()
	return &Result{Tag: "BEGIN"}, nil
}

// setModes applies BEGIN's or SET TRANSACTION's modes.
func (tx *txn) setModes(opts []*pg_query.Node) error {
	for _, o := range opts {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		switch d.Defname {
		case "transaction_isolation":
			if tx.queried && !tx.implicit {
				return sqlerr.New(sqlerr.ActiveSQLTransaction, "SET TRANSACTION ISOLATION LEVEL must be called before any query")
			}
			iso, err := dialect.ParseIsolation(constString(d.Arg))
			if err != nil {
				return err
			}
			tx.iso = iso
		case "transaction_read_only":
			ro := constString(d.Arg)
			tx.readOnly = ro == "1" || ro == "on" || ro == "true"
		case "transaction_deferrable":
			// Only SERIALIZABLE READ ONLY DEFERRABLE waits in PostgreSQL;
			// here no transaction waits to start.
		}
	}
	return nil
}

// syncIsolationSetting shows the transaction's dialect.Isolation level as
// transaction_isolation, or the session default outside a block.
func (s *Session) syncIsolationSetting() {
	v := s.settings.Get("default_transaction_isolation")
	if s.tx != nil {
		v = s.tx.iso.String()
	}
	s.settings.SetInternal("transaction_isolation", v)
	ro := s.settings.Get("default_transaction_read_only")
	if s.tx != nil {
		ro = "off"
		if s.tx.readOnly {
			ro = "on"
		}
	}
	s.settings.SetInternal("transaction_read_only", ro)
}

// transaction runs BEGIN, COMMIT, ROLLBACK and the savepoint statements.
// Every role may end its block (even one whose role was dropped meanwhile:
// it must not be stuck refusing everything).
func (s *Session) transaction(ctx context.Context, t *pg_query.TransactionStmt) (*Result, error) {
	noTx := &sqlerr.Error{Code: sqlerr.NoActiveSQLTransaction, Message: "there is no transaction in progress"}
	switch t.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
		return s.begin(t)
	case pg_query.TransactionStmtKind_TRANS_STMT_COMMIT:
		if t.Chain {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "COMMIT AND CHAIN is not supported")
		}
		if s.tx == nil {
			return &Result{Tag: "COMMIT", Warning: noTx}, nil
		}
		if s.tx.failed {
			// As PostgreSQL answers COMMIT of a failed block.
			s.rollbackTx(ctx)
			return &Result{Tag: "ROLLBACK"}, nil
		}
		if err := s.commitTx(ctx); err != nil {
			return nil, err
		}
		return &Result{Tag: "COMMIT"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		if t.Chain {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ROLLBACK AND CHAIN is not supported")
		}
		if s.tx == nil {
			return &Result{Tag: "ROLLBACK", Warning: noTx}, nil
		}
		s.rollbackTx(ctx)
		return &Result{Tag: "ROLLBACK"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		if s.tx == nil {
			return nil, sqlerr.New(sqlerr.NoActiveSQLTransaction, "SAVEPOINT can only be used in transaction blocks")
		}
		tx := s.tx
		tx.level++
		tx.saves = append(tx.saves, savepoint{name: t.SavepointName, mark: tx.level, settings: s.settings.Snapshot()})
		return &Result{Tag: "SAVEPOINT"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_RELEASE:
		if s.tx == nil {
			return nil, sqlerr.New(sqlerr.NoActiveSQLTransaction, "RELEASE SAVEPOINT can only be used in transaction blocks")
		}
		i, err := s.tx.findSavepoint(t.SavepointName)
		if err != nil {
			return nil, err
		}
		s.tx.saves = s.tx.saves[:i]
		return &Result{Tag: "RELEASE"}, nil
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		if s.tx == nil {
			return nil, sqlerr.New(sqlerr.NoActiveSQLTransaction, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
		}
		i, err := s.tx.findSavepoint(t.SavepointName)
		if err != nil {
			return nil, err
		}
		if err := s.rollbackTo(ctx, i); err != nil {
			return nil, err
		}
		return &Result{Tag: "ROLLBACK"}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported, "prepared transactions (two-phase commit) are not supported")
}

// findSavepoint returns the index of the latest savepoint of that name.
func (tx *txn) findSavepoint(name string) (int, error) {
	for i := len(tx.saves) - 1; i >= 0; i-- {
		if tx.saves[i].name == name {
			return i, nil
		}
	}
	return 0, sqlerr.New("3B001", "savepoint %q does not exist", name)
}

// rollbackTo undoes what the transaction did after savepoint i, which
// stays (a second ROLLBACK TO it is allowed), and ends the failure of the
// block.
func (s *Session) rollbackTo(ctx context.Context, i int) error {
	tx := s.tx
	sp := tx.saves[i]
	tx.saves = tx.saves[:i+1]
	for _, tt := range tx.tables {
		keep := len(tt.recs)
		for keep > 0 && tt.recs[keep-1].level >= sp.mark {
			keep--
		}
		// Records are never released here: the store keeps those it is
		// given, and the garbage collector frees the rest.
		for _, pr := range tt.recs[keep:] {
			tx.bytes -= membuffer.RecordBytes(pr.rec)
		}
		tt.recs = tt.recs[:keep]
		keepDels := len(tt.dels)
		for keepDels > 0 && tt.dels[keepDels-1].level >= sp.mark {
			keepDels--
		}
		tx.bytes -= tombRows(tt.dels[keepDels:])*tombstoneBytes + int64(len(tt.dels)-keepDels)*tombRunBytes
		tt.dels = tt.dels[:keepDels]
		if err := s.truncateEngineCopies(ctx, tt); err != nil {
			tx.failed = true
			return err
		}
	}
	keepFns := len(tx.functions)
	for keepFns > 0 && tx.functions[keepFns-1].level >= sp.mark {
		keepFns--
	}
	tx.functions = tx.functions[:keepFns]
	s.settings.Restore(sp.settings)
	s.syncIsolationSetting()
	s.dropPlans()
	tx.failed = false
	// The level stays where it is: writes from here on are tagged at or
	// above the savepoint's mark, so another ROLLBACK TO it undoes them.
	return nil
}

// commitTx commits the session's transaction and ends it, whatever the
// outcome.
func (s *Session) commitTx(ctx context.Context) error {
	tx := s.tx
	defer s.endTx(ctx, true)
	parts, err := tx.parts()
	if err != nil {
		return err
	}
	if err := s.p.store.CommitTx(ctx, tx.id, parts); err != nil {
		return wrapStoreErr(err)
	}
	// The block's functions, once its rows are committed. A failure
	// here leaves the rows committed and says which function is not.
	for _, tf := range tx.functions {
		if err := s.p.views.PutFunction(tf.f); err != nil {
			return &sqlerr.Error{Code: sqlerr.IOError, Message: fmt.Sprintf("the transaction's rows are committed, but function %q could not be stored: %v", tf.f.Name, err), Err: err}
		}
	}
	return nil
}

// rollbackTx discards the session's transaction.
func (s *Session) rollbackTx(ctx context.Context) { s.endTx(ctx, false) }

// endTx ends the session's transaction: its locks are released, its
// engine copies and views dropped, SET LOCAL undone (and, on rollback,
// every SET of the block).
func (s *Session) endTx(ctx context.Context, committed bool) {
	tx := s.tx
	if tx == nil {
		return
	}
	s.tx = nil
	for _, unlock := range tx.unlocks {
		unlock()
	}
	if tx.pinned {
		s.p.mirror.epochs.unpin(tx.epoch)
	}
	s.dropTxEngineState(context.WithoutCancel(ctx), tx)
	if len(tx.functions) > 0 {
		// Plans that inlined the block's functions, stored or not (a
		// COMMIT may fail).
		s.dropPlans()
	}
	if !tx.implicit {
		if !committed && tx.before != nil {
			s.settings.Restore(tx.before)
		}
		if committed {
			for name, v := range tx.local {
				_ = s.settings.Set(name, v)
			}
		}
		s.syncIsolationSetting()
	}
}

// dropTxEngineState drops the engine copies of a transaction's writes and
// the session views made over them.
func (s *Session) dropTxEngineState(ctx context.Context, tx *txn) {
	engine := len(tx.views) > 0
	for _, tt := range tx.tables {
		engine = engine || tt.created
	}
	if !engine {
		return
	}
	// A cursor still reading from the connection is read into memory
	// first: what follows runs on the connection.
	_ = s.useEngine(ctx) // a zone it refuses fails the next statement
	s.dropPlans()
	for name := range tx.views {
		if _, ok := s.views[name]; ok {
			s.conn.ExecContext(ctx, "DROP VIEW IF EXISTS temp.main."+schema.QuoteIdent(name))
			delete(s.views, name)
		}
	}
	for _, tt := range tx.tables {
		if tt.created {
			s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+tt.pending)
			s.conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+tt.tomb)
			tt.created = false
		}
	}
}

// statementKind refuses, inside a block, what cannot be part of a
// transaction here: PostgreSQL's 25001 for statements that change tables
// or roles (they apply at once and cannot be undone) and for VACUUM.
func (s *Session) checkInBlock(n *pg_query.Node) error {
	if s.tx == nil || s.tx.implicit {
		return nil
	}
	what := ""
	switch x := n.GetNode().(type) {
	case *pg_query.Node_CreateStmt:
		if x.CreateStmt.IfNotExists && s.known(x.CreateStmt.Relation.GetRelname()) {
			return nil // changes nothing
		}
		what = "CREATE TABLE"
	case *pg_query.Node_CreateTableAsStmt:
		what = "CREATE TABLE AS"
	case *pg_query.Node_ViewStmt:
		what = "CREATE VIEW"
	case *pg_query.Node_IndexStmt:
		what = "CREATE INDEX"
	case *pg_query.Node_AlterTableStmt:
		what = "ALTER TABLE"
	case *pg_query.Node_DropStmt:
		what = "DROP"
	case *pg_query.Node_VacuumStmt:
		what = "VACUUM"
		if !x.VacuumStmt.IsVacuumcmd {
			return nil
		}
	case *pg_query.Node_CreateRoleStmt, *pg_query.Node_AlterRoleStmt, *pg_query.Node_DropRoleStmt,
		*pg_query.Node_GrantRoleStmt, *pg_query.Node_GrantStmt:
		what = "changing roles"
	case *pg_query.Node_SelectStmt:
		if _, repair, _ := repairCall(n); repair {
			what = "tsdb_repair_table()"
		}
	}
	if what == "" {
		return nil
	}
	return &sqlerr.Error{Code: sqlerr.ActiveSQLTransaction, Message: fmt.Sprintf("%s cannot run inside a transaction block", what),
		Hint: "tsdb applies it at once, and a transaction could not undo it: run it outside BEGIN … COMMIT (with psycopg, SQLAlchemy or JDBC, in autocommit mode)."}
}
