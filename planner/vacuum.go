package planner

import (
	"context"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"tsdb/internal/sqlerr"
)

// vacuum runs VACUUM [table, …]: compaction of each table's small files,
// then deletion of files removed longer ago than the retention period (all
// tables without a list). ANALYZE is accepted and does nothing: the
// engine keeps no statistics to refresh.
func (s *Session) vacuum(ctx context.Context, st *pg_query.VacuumStmt) (*Result, error) {
	if !st.IsVacuumcmd {
		return &Result{Tag: "ANALYZE"}, nil
	}
	var names []string
	for _, r := range st.Rels {
		vr := r.GetVacuumRelation()
		if vr == nil {
			continue
		}
		if len(vr.VaCols) > 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "VACUUM of columns is not supported")
		}
		name, err := relationName(vr.Relation)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		for _, t := range s.p.store.Tables() {
			names = append(names, t.Name)
		}
	}
	for _, name := range names {
		if _, err := s.p.store.Vacuum(ctx, name); err != nil {
			return nil, wrapStoreErr(err)
		}
	}
	return &Result{Tag: "VACUUM"}, nil
}
