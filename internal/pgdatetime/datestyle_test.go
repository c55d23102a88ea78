package pgdatetime

import (
	"testing"
	"time"
)

// The expected texts are PostgreSQL 15's, with TimeZone PST8PDT unless a
// case names another zone.
func TestAppendDateTimeLikePostgres(t *testing.T) {
	pst, err := time.LoadLocation("PST8PDT")
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	kathmandu, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2001, 2, 3, 4, 5, 6, 500_000_000, time.UTC)
	summer := time.Date(1997, 7, 10, 17, 32, 1, 0, time.UTC)
	wall := time.Date(1999, 12, 31, 16, 0, 0, 0, time.UTC)
	bc := time.Date(-96, 2, 16, 0, 0, 0, 0, time.UTC) // 97 BC
	tests := []struct {
		t     time.Time
		kind  TimeKind
		loc   *time.Location
		style DateStyle
		order Order
		want  string
	}{
		{ts, KindTimestamptz, pst, PostgresDates, MDY, "Fri Feb 02 20:05:06.5 2001 PST"},
		{wall, KindTimestamp, pst, PostgresDates, MDY, "Fri Dec 31 16:00:00 1999"},
		{bc, KindDate, pst, PostgresDates, MDY, "02-16-0097 BC"},
		{summer, KindTimestamptz, pst, PostgresDates, MDY, "Thu Jul 10 10:32:01 1997 PDT"},
		{ts, KindTimestamptz, pst, PostgresDates, DMY, "Fri 02 Feb 20:05:06.5 2001 PST"},
		{wall, KindTimestamp, pst, PostgresDates, DMY, "Fri 31 Dec 16:00:00 1999"},
		{bc, KindDate, pst, PostgresDates, DMY, "16-02-0097 BC"},
		{ts, KindTimestamptz, pst, SQLDates, DMY, "02/02/2001 20:05:06.5 PST"},
		{wall, KindTimestamp, pst, SQLDates, DMY, "31/12/1999 16:00:00"},
		{bc, KindDate, pst, SQLDates, DMY, "16/02/0097 BC"},
		{wall, KindTimestamp, pst, SQLDates, MDY, "12/31/1999 16:00:00"},
		{bc, KindDate, pst, SQLDates, MDY, "02/16/0097 BC"},
		{ts, KindTimestamptz, pst, GermanDates, DMY, "02.02.2001 20:05:06.5 PST"},
		{wall, KindTimestamp, pst, GermanDates, DMY, "31.12.1999 16:00:00"},
		{bc, KindDate, pst, GermanDates, MDY, "16.02.0097 BC"},
		{time.Date(2001, 7, 3, 4, 5, 6, 0, time.UTC), KindTimestamptz, berlin, PostgresDates, MDY, "Tue Jul 03 06:05:06 2001 CEST"},
		{time.Date(2001, 7, 3, 4, 5, 6, 0, time.UTC), KindTimestamptz, kathmandu, PostgresDates, MDY, "Tue Jul 03 09:50:06 2001 +0545"},
		{time.Date(2001, 7, 3, 4, 5, 6, 0, time.UTC), KindTimestamptz, time.FixedZone("<+02>-02", 7200), PostgresDates, MDY, "Tue Jul 03 06:05:06 2001 +02"},
		{time.Date(2001, 7, 3, 4, 5, 6, 0, time.UTC), KindTimestamptz, time.FixedZone("UTC+3", -3*3600), PostgresDates, MDY, "Tue Jul 03 01:05:06 2001 UTC"},
		{time.Date(2001, 7, 3, 4, 5, 6, 0, time.UTC), KindTimestamptz, time.FixedZone("<-04:30>+04:30", -16200), PostgresDates, MDY, "Mon Jul 02 23:35:06 2001 -04:30"},
		{time.Date(12345, 1, 2, 3, 4, 5, 0, time.UTC), KindTimestamp, nil, SQLDates, MDY, "01/02/12345 03:04:05"},
	}
	for _, tt := range tests {
		if got := string(AppendDateTime(nil, tt.t, tt.kind, tt.loc, tt.style, tt.order)); got != tt.want {
			t.Errorf("%v kind %d %v %d: got %q, want %q", tt.t, tt.kind, tt.style, tt.order, got, tt.want)
		}
	}
}

func TestDateStyleOf(t *testing.T) {
	for in, want := range map[string]DateStyle{"ISO, MDY": ISODates, "Postgres, DMY": PostgresDates, "SQL, MDY": SQLDates, "German, DMY": GermanDates, "": ISODates} {
		if got := DateStyleOf(in); got != want {
			t.Errorf("%q: got %v, want %v", in, got, want)
		}
	}
}
