package dialect

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestToCharNumber compares to_char(value::type, format) with PostgreSQL
// 15's answers, recorded in testdata/to_char_number.tsv (type, value as
// PostgreSQL prints it, format, answer or ERROR) over a grid of values,
// types and templates (the int8 suite's among them).
func TestToCharNumber(t *testing.T) {
	f, err := os.Open("testdata/to_char_number.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) != 4 {
			t.Fatalf("bad line %q", sc.Text())
		}
		n++
		engineType := map[string]string{"numeric": "DECIMAL(38,10)", "int8": "BIGINT", "float8": "DOUBLE", "float4": "FLOAT"}[parts[0]]
		got, err := ToCharNumber(parts[1], engineType, parts[2])
		switch {
		case parts[3] == "ERROR" && err == nil:
			t.Errorf("to_char(%s::%s, %q) = %q, PostgreSQL refuses it", parts[1], parts[0], parts[2], got)
		case parts[3] != "ERROR" && (err != nil || got != parts[3]):
			t.Errorf("to_char(%s::%s, %q) = %q %v, PostgreSQL %q", parts[1], parts[0], parts[2], got, err, parts[3])
		}
	}
	if n < 1000 {
		t.Fatalf("only %d cases read", n)
	}
}

// FuzzToCharNumber: any value text and template get an answer or an
// error, never a panic (the engine calls ToCharNumber inside a query).
func FuzzToCharNumber(f *testing.F) {
	for _, seed := range [][3]string{
		{"485", "DECIMAL(38,10)", "999PR"}, {"-0.5", "DOUBLE", "FM9.99EEEE"}, {"1e300", "DOUBLE", "9G999D99"},
		{"12", "BIGINT", "RN"}, {"0.000123", "FLOAT", "0.9999V99"}, {"", "DECIMAL(38,10)", "\"x\"\\"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, value, typeName, format string) {
		_, _ = ToCharNumber(value, typeName, format)
	})
}
