package planner

import (
	"fmt"
	"testing"
)

func TestExactColumn(t *testing.T) {
	tests := []struct {
		duckType string
		oid      uint32
		kind     exactKind
		ok       bool
	}{
		{`STRUCT(_tsdb_avg DOUBLE, n BIGINT, s HUGEINT)`, 1700, exactAvg, true},
		{`STRUCT("_tsdb_var_samp" DOUBLE, n BIGINT, s DECIMAL(38,2), q DECIMAL(38,4))`, 1700, exactVarSamp, true},
		{`STRUCT(_tsdb_stddev_pop DOUBLE, n BIGINT, s DOUBLE, q DOUBLE)`, 701, exactFloat, true},
		{`STRUCT(a INTEGER, b VARCHAR)`, 0, exactNone, false},
	}
	for _, tt := range tests {
		c, ok := exactColumn("x", tt.duckType)
		if ok != tt.ok || (ok && (c.OID != tt.oid || c.exact != tt.kind)) {
			t.Errorf("%s: %+v %v, want OID %d kind %d %v", tt.duckType, c, ok, tt.oid, tt.kind, tt.ok)
		}
	}
	if got := fmt.Sprint(structFields(`STRUCT("a b" DECIMAL(10,2), c STRUCT(d INTEGER, e VARCHAR))`)); got != "[[a b DECIMAL(10,2)] [c STRUCT(d INTEGER, e VARCHAR)]]" {
		t.Errorf("structFields: %s", got)
	}
}
