package delta

import "testing"

func TestTableDir(t *testing.T) {
	tests := []struct{ name, dir string }{
		{"cpu", "cpu"},
		{"disk_io2", "disk_io2"},
		{"disk-io", "disk-io"},
		{"CPU", "~43~50~55"},
		{"cpu.load", "cpu~2Eload"},
		{"..", "~2E~2E"},
		{"a/b", "a~2Fb"},
		{"Used %", "~55sed~20~25"},
		{"k=v*[x]", "k~3Dv~2A~5Bx~5D"},
		{"température", "temp~C3~A9rature"},
		{".dropped-x", "~2Edropped-x"},
		{"a~b", "a~7Eb"},
	}
	for _, tt := range tests {
		if got := TableDir(tt.name); got != tt.dir {
			t.Errorf("TableDir(%q) = %q, want %q", tt.name, got, tt.dir)
		}
		if got, ok := TableName(tt.dir); !ok || got != tt.name {
			t.Errorf("TableName(%q) = %q %v, want %q", tt.dir, got, ok, tt.name)
		}
	}
	// Directories TableDir never makes are no tables of tsdb's.
	for _, dir := range []string{"CPU", "cpu.old", "~4", "~zz", "~63pu", ""} {
		if name, ok := TableName(dir); ok {
			t.Errorf("TableName(%q) = %q, want none", dir, name)
		}
	}
}
