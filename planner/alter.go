package planner

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/ingest"
	"tsdb/internal/schema"
	"tsdb/internal/sqlerr"
	"tsdb/internal/sqltree"
)

// alterTable runs ALTER TABLE t ADD COLUMN c type (nullable, no default:
// existing rows read NULL), ALTER TABLE t SET (retention = '30 days') and
// ALTER TABLE t RESET (retention): how long the table keeps rows, and
// SET (cluster_by = 'col') / RESET (cluster_by): the column data files
// group rows by within each hour, and SET (dedup_keys = 'a,b') / RESET
// (dedup_keys): the columns that identify a point (dedup.go).
func (s *Session) alterTable(ctx context.Context, st *pg_query.AlterTableStmt) (*Result, error) {
	if st.Objtype != pg_query.ObjectType_OBJECT_TABLE {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ALTER %s is not supported", strings.TrimPrefix(st.Objtype.String(), "OBJECT_"))
	}
	if _, ok := isTempRelation(st.Relation); ok {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ALTER TABLE of a temporary table is not supported")
	}
	name, err := relationName(st.Relation)
	if err != nil {
		return nil, err
	}
	if _, ok := s.p.store.Table(name); !ok {
		if st.MissingOk {
			return &Result{Tag: "ALTER TABLE"}, nil
		}
		return nil, s.missing(name)
	}
	// Every command is checked before any takes effect.
	var opts ingest.TableOptions
	var add []schema.Column
	var dedup *string // SET (dedup_keys = …), or "" for RESET
	tbl, _ := s.p.store.Table(name)
	for _, c := range st.Cmds {
		cmd := c.GetAlterTableCmd()
		switch cmd.GetSubtype() {
		case pg_query.AlterTableType_AT_SetRelOptions, pg_query.AlterTableType_AT_ResetRelOptions:
			reset := cmd.GetSubtype() == pg_query.AlterTableType_AT_ResetRelOptions
			for _, o := range cmd.GetDef().GetList().GetItems() {
				def := o.GetDefElem()
				var v string
				if !reset {
					if v, err = optionValue(def); err != nil {
						return nil, err
					}
				}
				switch def.GetDefname() {
				case "cluster_by":
					opts.Cluster = &v
				case "dedup_keys":
					dedup = &v
				case "retention":
					var d time.Duration
					if !reset {
						if d, err = parseRetention(v); err != nil {
							return nil, err
						}
					}
					opts.Retention = &d
				default:
					if !pgStorageParameter(def) {
						return nil, sqlerr.New(sqlerr.InvalidParameterValue, "unrecognized parameter %q (tsdb tables have cluster_by, retention and dedup_keys)", def.GetDefname())
					}
				}
			}
		case pg_query.AlterTableType_AT_SetStorage, pg_query.AlterTableType_AT_SetCompression, pg_query.AlterTableType_AT_SetStatistics:
			// How PostgreSQL stores or samples a column (TOAST,
			// compression, the planner's statistics): nothing a
			// table of Parquet files has, and nothing an answer
			// depends on.
			if tbl.ColumnIndex(cmd.GetName()) < 0 {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", cmd.GetName(), name)
			}
		case pg_query.AlterTableType_AT_AddColumn:
			col, err := columnFromDef(cmd.GetDef().GetColumnDef())
			if err != nil {
				return nil, err
			}
			if tbl.ColumnIndex(col.Name) >= 0 || containsColumn(add, col.Name) {
				if cmd.MissingOk { // ADD COLUMN IF NOT EXISTS
					continue
				}
				return nil, sqlerr.New(sqlerr.DuplicateColumn, "column %q of relation %q already exists", col.Name, name)
			}
			if col.NotNull {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "column %q: an added column cannot be NOT NULL (existing rows have no value)", col.Name)
			}
			add = append(add, col)
		default:
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "ALTER TABLE supports ADD COLUMN, SET (retention = …, cluster_by = …, dedup_keys = …) and RESET (retention, cluster_by, dedup_keys); PostgreSQL's storage parameters and ALTER COLUMN … SET STORAGE, COMPRESSION and STATISTICS are taken and change nothing")
		}
	}
	// A column added by the same statement may be named.
	wide := tbl
	wide.Columns = append(append([]schema.Column(nil), tbl.Columns...), add...)
	if opts.Cluster != nil {
		if err := ingest.CheckCluster(wide, *opts.Cluster); err != nil {
			return nil, err
		}
	}
	if dedup != nil {
		// Checked before anything changes. The rows are checked for
		// duplicate points once, by setDedup, except when the statement
		// adds columns, which would stay added if that check failed:
		// then also before (the new columns are NULL in every row, so
		// they tell no rows apart).
		cols, err := parseDedupKeys(wide, *dedup)
		if err != nil {
			return nil, err
		}
		if len(add) > 0 {
			var have []string
			for _, c := range cols {
				if tbl.ColumnIndex(c) >= 0 {
					have = append(have, c)
				}
			}
			if err := s.checkNoDuplicatePoints(ctx, tbl, have); err != nil {
				return nil, err
			}
		}
	}
	if len(add) > 0 {
		if err := s.p.store.AddColumns(ctx, name, add); err != nil {
			return nil, wrapStoreErr(err)
		}
	}
	// The options are one commit. With ADD COLUMN in the same statement
	// they are a second one, after the columns; dedup_keys a third,
	// checked against every row as it commits (setDedup).
	if opts.Retention != nil || opts.Cluster != nil {
		if err := s.p.store.SetOptions(ctx, name, opts); err != nil {
			return nil, wrapStoreErr(err)
		}
	}
	if dedup != nil {
		if err := s.setDedup(ctx, name, *dedup); err != nil {
			return nil, err
		}
	}
	return &Result{Tag: "ALTER TABLE"}, nil
}

// pgStorageParameters are PostgreSQL's storage parameters of a table:
// how its heap is filled, vacuumed and TOASTed, and how many workers scan
// it. tsdb's tables have none of that; ALTER TABLE … SET takes them (as
// pg_dump and migration tools write them) and changes nothing, since no
// answer depends on them.
var pgStorageParameters = map[string]bool{
	"fillfactor": true, "toast_tuple_target": true, "parallel_workers": true, "user_catalog_table": true,
	"vacuum_index_cleanup": true, "vacuum_truncate": true, "log_autovacuum_min_duration": true,
}

// pgStorageParameter reports a PostgreSQL storage parameter
// (pgStorageParameters, autovacuum_*, toast.*).
func pgStorageParameter(def *pg_query.DefElem) bool {
	name := def.GetDefname()
	return pgStorageParameters[name] || strings.HasPrefix(name, "autovacuum_") || def.GetDefnamespace() == "toast"
}

// optionValue is an option's value as written: '30 days', 30, or a word
// (cluster_by = host). An option without a value is an error.
func optionValue(def *pg_query.DefElem) (string, error) {
	switch a := def.GetArg().GetNode().(type) {
	case *pg_query.Node_String_:
		return a.String_.Sval, nil
	case *pg_query.Node_Integer:
		return strconv.Itoa(int(a.Integer.Ival)), nil
	case *pg_query.Node_Float:
		return a.Float.Fval, nil
	case *pg_query.Node_TypeName:
		// A bare word parses as a type name.
		return sqltree.TypeName(a.TypeName), nil
	}
	return "", sqlerr.New(sqlerr.InvalidParameterValue, "parameter %q needs a value", def.GetDefname())
}

// retentionUnits are the interval units a retention may be written in.
var retentionUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
	"mon": 30 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "months": 30 * 24 * time.Hour,
	"y": 365 * 24 * time.Hour, "year": 365 * 24 * time.Hour, "years": 365 * 24 * time.Hour,
}

// maxRetention is the longest retention accepted.
const maxRetention = 200 * 365 * 24 * time.Hour

// parseRetention reads a retention written like a PostgreSQL interval
// ('30 days', '1 year 6 months', '12 hours') or a Go duration ('720h');
// a month is 30 days and a year 365, as in PostgreSQL's interval epoch.
func parseRetention(v string) (time.Duration, error) {
	bad := func() error {
		return sqlerr.New(sqlerr.InvalidParameterValue, "invalid retention %q: write it like '30 days', '12 hours' or '1 year'", v)
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 || d > maxRetention {
			return 0, bad()
		}
		return d, nil
	}
	fields := strings.Fields(strings.ToLower(v))
	if len(fields) == 0 {
		return 0, bad()
	}
	var sum float64
	for i := 0; i < len(fields); i++ {
		num, unit := fields[i], ""
		// "30d" or "30 days"
		if j := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); j > 0 {
			num, unit = num[:j], num[j:]
		} else if i+1 < len(fields) {
			i++
			unit = fields[i]
		}
		n, err := strconv.ParseFloat(num, 64)
		mult, ok := retentionUnits[unit]
		if err != nil || !ok || n <= 0 {
			return 0, bad()
		}
		// Summed as floats: time.Duration ends at 292 years and would wrap.
		if sum += n * float64(mult); sum > float64(maxRetention) {
			return 0, sqlerr.New(sqlerr.InvalidParameterValue, "retention %q is longer than 200 years; use RESET (retention) to keep rows forever", v)
		}
	}
	return time.Duration(sum), nil
}

// wrapStoreErr passes SQL errors through and reports the others as I/O
// errors (the storage failed, the statement was fine).
func wrapStoreErr(err error) error {
	err = storeError(err)
	var se *sqlerr.Error
	if errors.As(err, &se) {
		return err
	}
	return sqlerr.Wrap(sqlerr.IOError, err)
}

func containsColumn(cols []schema.Column, name string) bool {
	for _, c := range cols {
		if c.Name == name {
			return true
		}
	}
	return false
}
