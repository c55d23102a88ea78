package dialect

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"tsdb/internal/pgdatetime"
	"tsdb/internal/sqlerr"
)

// ServerVersion is the PostgreSQL version tsdb reports to clients. Drivers
// and psql choose their catalog queries by it.
const ServerVersion = "16.6"

// setting is a session parameter clients may SET and SHOW.
type setting struct {
	def     string
	reports bool // sent as ParameterStatus when it changes
	check   func(string) (string, error)
	// fixed settings cannot be changed (the server's, or what tsdb
	// sets itself, as work_mem).
	fixed bool
}

var settingDefs = map[string]setting{
	"application_name":              {def: "", reports: true},
	"client_encoding":               {def: "UTF8", reports: true, check: checkEncoding},
	"datestyle":                     {def: "ISO, MDY", reports: true, check: checkDateStyle},
	"default_transaction_isolation": {def: "read committed", check: checkIsolation},
	"extra_float_digits":            {def: "1", check: checkFloatDigits},
	"integer_datetimes":             {def: "on", reports: true, fixed: true},
	"intervalstyle":                 {def: "postgres", reports: true, check: checkIntervalStyle},
	"is_superuser":                  {def: "on", reports: true, fixed: true},
	"search_path":                   {def: `"$user", public`},
	"server_encoding":               {def: "UTF8", reports: true, fixed: true},
	// Text sorts by code point and changes case by Unicode's rules, as
	// PostgreSQL's C.UTF-8 locale does (pg_database says so too).
	"lc_collate":                          {def: "C.UTF-8", fixed: true},
	"lc_ctype":                            {def: "C.UTF-8", fixed: true},
	"server_version":                      {def: ServerVersion, reports: true, fixed: true},
	"server_version_num":                  {def: "160006", fixed: true},
	"standard_conforming_strings":         {def: "on", reports: true, check: checkBool},
	"statement_timeout":                   {def: "0"},
	"timezone":                            {def: "UTC", reports: true, check: checkTimeZone},
	"transaction_isolation":               {def: "read committed"},
	"lock_timeout":                        {def: "0"},
	"idle_in_transaction_session_timeout": {def: "0"},
	"bytea_output":                        {def: "hex", check: checkByteaOutput},
	// Settings of PostgreSQL that clients and poolers send at startup
	// or SET, which change nothing tsdb does: kept and shown.
	"client_min_messages":           {def: "notice"},
	"lc_messages":                   {def: "C"},
	"lc_monetary":                   {def: "C"},
	"lc_numeric":                    {def: "C"},
	"lc_time":                       {def: "C"},
	"synchronous_commit":            {def: "on"},
	"default_transaction_read_only": {def: "off", check: checkBool},
	"transaction_read_only":         {def: "off"},
	"row_security":                  {def: "on"},
	"jit":                           {def: "off"},
	"timezone_abbreviations":        {def: "Default"},
	// PostgreSQL's planner knobs: scripts and test suites set them to
	// steer PostgreSQL's plans; they never change an answer, and the
	// engine plans its own way, so they are checked, kept and shown.
	"enable_async_append":             {def: "on", check: checkBool},
	"enable_bitmapscan":               {def: "on", check: checkBool},
	"enable_gathermerge":              {def: "on", check: checkBool},
	"enable_hashagg":                  {def: "on", check: checkBool},
	"enable_hashjoin":                 {def: "on", check: checkBool},
	"enable_incremental_sort":         {def: "on", check: checkBool},
	"enable_indexonlyscan":            {def: "on", check: checkBool},
	"enable_indexscan":                {def: "on", check: checkBool},
	"enable_material":                 {def: "on", check: checkBool},
	"enable_memoize":                  {def: "on", check: checkBool},
	"enable_mergejoin":                {def: "on", check: checkBool},
	"enable_nestloop":                 {def: "on", check: checkBool},
	"enable_parallel_append":          {def: "on", check: checkBool},
	"enable_parallel_hash":            {def: "on", check: checkBool},
	"enable_partition_pruning":        {def: "on", check: checkBool},
	"enable_seqscan":                  {def: "on", check: checkBool},
	"enable_sort":                     {def: "on", check: checkBool},
	"enable_tidscan":                  {def: "on", check: checkBool},
	"escape_string_warning":           {def: "on", check: checkBool},
	"geqo":                            {def: "on", check: checkBool},
	"enable_partitionwise_aggregate":  {def: "off", check: checkBool},
	"enable_partitionwise_join":       {def: "off", check: checkBool},
	"jit_above_cost":                  {def: "100000", check: checkNumber},
	"jit_inline_above_cost":           {def: "500000", check: checkNumber},
	"jit_optimize_above_cost":         {def: "500000", check: checkNumber},
	"parallel_setup_cost":             {def: "1000", check: checkNumber},
	"parallel_tuple_cost":             {def: "0.1", check: checkNumber},
	"max_parallel_workers_per_gather": {def: "2", check: checkNumber},
	"random_page_cost":                {def: "4", check: checkNumber},
	"seq_page_cost":                   {def: "1", check: checkNumber},
	"cpu_tuple_cost":                  {def: "0.01", check: checkNumber},
	"cpu_index_tuple_cost":            {def: "0.005", check: checkNumber},
	"cpu_operator_cost":               {def: "0.0025", check: checkNumber},
	"from_collapse_limit":             {def: "8", check: checkNumber},
	"join_collapse_limit":             {def: "8", check: checkNumber},
	// Plan knobs of parallel query and memory, as above.
	"min_parallel_table_scan_size":  {def: "8MB", check: checkMemoryValue},
	"min_parallel_index_scan_size":  {def: "512kB", check: checkMemoryValue},
	"effective_cache_size":          {def: "4GB", check: checkMemoryValue},
	"parallel_leader_participation": {def: "on", check: checkBool},
	"hash_mem_multiplier":           {def: "2", check: checkNumber},
	// work_mem is the engine's memory for one statement's sorts, hash
	// tables and joins before they spill (operator_memory_limit): the
	// session starts with the server's --statement-memory-limit and may
	// change it, as in PostgreSQL.
	"work_mem": {def: "4MB", check: checkWorkMem},
}

// parseMemory reads a PostgreSQL memory setting: a whole number with an
// optional unit (B, kB, MB, GB, TB); without one it counts in unit.
func parseMemory(v string, unit int64) (int64, bool) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || i == 0 && v[i] == '-') {
		i++
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	switch strings.TrimSpace(v[i:]) {
	case "":
	case "B":
		unit = 1
	case "kB":
		unit = 1 << 10
	case "MB":
		unit = 1 << 20
	case "GB":
		unit = 1 << 30
	case "TB":
		unit = 1 << 40
	default:
		return 0, false
	}
	if n > math.MaxInt64/unit || n < -1 {
		return 0, false
	}
	return n * unit, true
}

// checkMemoryValue accepts a memory setting (counted in kB without a unit).
func checkMemoryValue(v string) (string, error) {
	b, ok := parseMemory(v, 1<<10)
	if !ok {
		return "", errors.New(`requires a memory value, such as "64kB" or "8MB"`)
	}
	return FormatMemory(b), nil
}

// checkWorkMem accepts work_mem: at least 64kB, as PostgreSQL, or -1 (no
// limit of its own, the server's value when it has none).
func checkWorkMem(v string) (string, error) {
	b, ok := parseMemory(v, 1<<10)
	if ok && b == -1<<10 {
		return "-1", nil
	}
	if !ok || b < 64<<10 || b > 2147483647<<10 {
		return "", fmt.Errorf("%q: work_mem takes 64kB to 2147483647kB", v)
	}
	return FormatMemory(b), nil
}

// WorkMem returns work_mem in bytes; 0 when the server set no limit.
func (s *Settings) WorkMem() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workMem
}

// FormatMemory writes bytes the way PostgreSQL shows memory settings.
func FormatMemory(b int64) string {
	switch {
	case b <= 0:
		return "-1"
	case b%(1<<30) == 0:
		return strconv.FormatInt(b>>30, 10) + "GB"
	case b%(1<<20) == 0:
		return strconv.FormatInt(b>>20, 10) + "MB"
	default:
		return strconv.FormatInt(max(b>>10, 1), 10) + "kB"
	}
}

// displayNames keeps PostgreSQL's capitalisation for ParameterStatus.
var displayNames = map[string]string{"datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone"}

// DisplayName returns a setting's name as PostgreSQL spells it.
func DisplayName(name string) string {
	if d, ok := displayNames[name]; ok {
		return d
	}
	return name
}

func checkEncoding(v string) (string, error) {
	switch strings.ToUpper(strings.ReplaceAll(v, "-", "")) {
	case "UTF8", "UNICODE":
		return "UTF8", nil
	}
	return "", fmt.Errorf("only UTF8 is supported")
}

// checkDateStyle reads DateStyle: the output style (ISO, SQL, Postgres or
// German) and the field order of ambiguous dates (MDY, DMY, YMD, or
// PostgreSQL's US/NonEuropean and European). A part not given is left
// as it was; Set merges it ("-" here). German without an order sets DMY,
// as in PostgreSQL; two styles or two orders in one value conflict.
func checkDateStyle(v string) (string, error) {
	style, order := "-", "-"
	setStyle := func(s string) error {
		if style != "-" && style != s {
			return errors.New("conflicting \"datestyle\" specifications")
		}
		style = s
		return nil
	}
	setOrder := func(o string) error {
		if order != "-" && order != o {
			return errors.New("conflicting \"datestyle\" specifications")
		}
		order = o
		return nil
	}
	explicitOrder := false
	for _, part := range strings.FieldsFunc(strings.ToUpper(v), func(r rune) bool { return r == ',' || r == ' ' }) {
		var err error
		switch part {
		case "ISO", "SQL", "GERMAN", "POSTGRES":
			err = setStyle(pgdatetime.DateStyleOf(part).String())
		case "MDY", "US", "NONEUROPEAN", "NONEURO":
			err, explicitOrder = setOrder("MDY"), true
		case "DMY", "EUROPEAN", "EURO":
			err, explicitOrder = setOrder("DMY"), true
		case "YMD":
			err, explicitOrder = setOrder("YMD"), true
		case "DEFAULT":
			err = setStyle("ISO")
			if err == nil {
				err, explicitOrder = setOrder("MDY"), true
			}
		default:
			return "", fmt.Errorf("unrecognized key word: %q", part)
		}
		if err != nil {
			return "", err
		}
	}
	if style == "German" && !explicitOrder {
		order = "DMY"
	}
	return style + ", " + order, nil
}

// DateStyle is the session's output style of dates and timestamps.
func (s *Settings) DateStyle() pgdatetime.DateStyle {
	return pgdatetime.DateStyleOf(s.Get("datestyle"))
}

// DateOrder is the session's field order of ambiguous dates.
func (s *Settings) DateOrder() pgdatetime.Order {
	switch v := s.Get("datestyle"); {
	case strings.HasSuffix(v, "DMY"):
		return pgdatetime.DMY
	case strings.HasSuffix(v, "YMD"):
		return pgdatetime.YMD
	}
	return pgdatetime.MDY
}

func checkIsolation(v string) (string, error) {
	iso, err := ParseIsolation(v)
	if err != nil {
		return "", errors.New("use read committed, repeatable read or serializable")
	}
	return iso.String(), nil
}

func checkBool(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "yes", "1", "t", "y":
		return "on", nil
	case "off", "false", "no", "0", "f", "n":
		return "off", nil
	}
	return "", errors.New("requires a Boolean value")
}

// checkFloatDigits accepts extra_float_digits: -15 to 3.
func checkFloatDigits(v string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return "", errors.New("requires an integer value")
	}
	if n < -15 || n > 3 {
		return "", fmt.Errorf("%d is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)", n)
	}
	return strconv.Itoa(n), nil
}

// ExtraFloatDigits is extra_float_digits: at 1 or more floats are written
// in their shortest exact form, at 0 or less with 15 (float4: 6) digits
// plus it.
func (s *Settings) ExtraFloatDigits() int {
	n, err := strconv.Atoi(s.Get("extra_float_digits"))
	if err != nil {
		return 1
	}
	return n
}

// checkIntervalStyle accepts PostgreSQL's four interval styles.
func checkIntervalStyle(v string) (string, error) {
	st, ok := pgdatetime.IntervalStyleOf(v)
	if !ok {
		return "", fmt.Errorf("%q", v)
	}
	return st.String(), nil
}

// IntervalStyle returns the session's IntervalStyle.
func (s *Settings) IntervalStyle() pgdatetime.IntervalStyle {
	st, _ := pgdatetime.IntervalStyleOf(s.Get("intervalstyle"))
	return st
}

// checkNumber accepts a planner cost or limit: a number.
func checkNumber(v string) (string, error) {
	v = strings.TrimSpace(v)
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		return "", errors.New("requires a numeric value")
	}
	return v, nil
}

func checkTimeZone(v string) (string, error) {
	z, ok := zoneOf(v)
	if !ok {
		return "", fmt.Errorf("%q", v)
	}
	return z.show, nil
}

// sessionZone is a TimeZone setting read: the zone, the name the engine
// (ICU) knows it by, and the value SHOW prints.
type sessionZone struct {
	loc    *time.Location
	engine string
	show   string
}

// zoneOf reads a TimeZone value as PostgreSQL does: a zone name, a number
// of hours east of UTC (SQL's sign: SET TIME ZONE 2, shown as <+02>-02),
// or a POSIX offset, hours west, with an optional name ('UTC+3', '-04:30',
// '<+03>-03'; POSIX rules for daylight time are not taken).
func zoneOf(v string) (sessionZone, bool) {
	// An empty zone (libpq sends PGTZ set to nothing) is UTC, as tsdb has
	// always read it; PostgreSQL refuses it.
	if strings.EqualFold(v, "utc") || v == "Z" || v == "" {
		return sessionZone{loc: time.UTC, engine: "UTC", show: "UTC"}, true
	}
	if h, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
		if math.Abs(h) > 24 {
			return sessionZone{}, false
		}
		secs := int(math.Round(h * 3600))
		return fixedZone(secs, "<"+offsetText(secs)+">"+offsetText(-secs))
	}
	if loc, err := time.LoadLocation(v); err == nil && v != "Local" {
		return sessionZone{loc: loc, engine: v, show: v}, true
	}
	rest := v
	if strings.HasPrefix(rest, "<") {
		i := strings.IndexByte(rest, '>')
		if i < 0 {
			return sessionZone{}, false
		}
		rest = rest[i+1:]
	} else {
		rest = strings.TrimLeftFunc(rest, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	}
	west, ok := posixOffset(rest)
	if !ok {
		return sessionZone{}, false
	}
	return fixedZone(-west, v)
}

// ZoneLocation is the zone a TimeZone value names, read as SET TimeZone
// reads it (zoneOf).
func ZoneLocation(v string) (*time.Location, bool) {
	z, ok := zoneOf(v)
	return z.loc, ok
}

// fixedZone is a zone secs east of UTC.
func fixedZone(secs int, show string) (sessionZone, bool) {
	if secs%60 != 0 {
		return sessionZone{}, false // ICU's custom zones are whole minutes
	}
	sign, m := "+", secs/60
	if m < 0 {
		sign, m = "-", -m
	}
	return sessionZone{loc: time.FixedZone(show, secs), engine: fmt.Sprintf("GMT%s%02d:%02d", sign, m/60, m%60), show: show}, true
}

// offsetText writes secs east as PostgreSQL names a fixed zone: +02,
// -07:30.
func offsetText(secs int) string {
	sign := "+"
	if secs < 0 {
		sign, secs = "-", -secs
	}
	out := fmt.Sprintf("%s%02d", sign, secs/3600)
	if rem := secs % 3600; rem != 0 {
		out += fmt.Sprintf(":%02d", rem/60)
		if rem%60 != 0 {
			out += fmt.Sprintf(":%02d", rem%60)
		}
	}
	return out
}

// posixOffset reads a POSIX TZ offset: [+-]hh[:mm[:ss]], hours west.
func posixOffset(s string) (int, bool) {
	sign := 1
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "-"):
		sign, s = -1, s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 || s == "" {
		return 0, false
	}
	secs := 0
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) > 2 || (i > 0 && n > 59) {
			return 0, false
		}
		secs += n * []int{3600, 60, 1}[i]
	}
	if secs > 24*3600 {
		return 0, false
	}
	return sign * secs, true
}

// Settings are a session's parameters. Safe for concurrent use (the wire
// layer reads TimeZone while formatting).
type Settings struct {
	mu     sync.Mutex
	values map[string]string
	// resets are the values RESET returns to where the startup packet set
	// them (pg_regress's PGTZ, a driver's TimeZone), as in PostgreSQL.
	resets map[string]string
	// zone and workMem are TimeZone and work_mem read, kept as the values
	// change (derive): the planner asks for them on every statement.
	zone    sessionZone
	workMem int64
}

// NewSettings returns the defaults.
func NewSettings() *Settings {
	s := &Settings{values: map[string]string{}, resets: map[string]string{}, zone: sessionZone{loc: time.UTC, engine: "UTC", show: "UTC"}}
	for k, d := range settingDefs {
		s.values[k] = d.def
	}
	s.derive()
	return s
}

// Set changes a parameter (as SET or a startup parameter does).
func (s *Settings) Set(name, value string) error {
	name = strings.ToLower(name)
	def, ok := settingDefs[name]
	if !ok {
		return sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if def.fixed {
		if value == s.Get(name) {
			return nil // setting a read-only parameter to its value is fine
		}
		return &sqlerr.Error{Code: "55P02", Message: fmt.Sprintf("parameter %q cannot be changed", DisplayName(name))}
	}
	if def.check != nil {
		v, err := def.check(value)
		if err != nil {
			if value == s.Get(name) {
				return nil // setting a read-only parameter to its value is fine
			}
			msg := fmt.Sprintf("invalid value for parameter %q: %v", DisplayName(name), err)
			if strings.HasPrefix(err.Error(), "requires ") {
				msg = fmt.Sprintf("parameter %q %v", DisplayName(name), err) // PostgreSQL's wording
			}
			return &sqlerr.Error{Code: sqlerr.InvalidParameterValue, Message: msg}
		}
		value = v
	}
	if name == "datestyle" {
		old := strings.SplitN(s.Get(name), ", ", 2)
		parts := strings.SplitN(value, ", ", 2)
		for i := range parts {
			if parts[i] == "-" && i < len(old) {
				parts[i] = old[i]
			}
		}
		value = strings.Join(parts, ", ")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[name] = value
	s.derive()
	return nil
}

// derive reads TimeZone and work_mem from the values; s.mu is held.
func (s *Settings) derive() {
	if z, ok := zoneOf(s.values["timezone"]); ok {
		s.zone = z
	}
	s.workMem = 0
	if b, ok := parseMemory(s.values["work_mem"], 1<<10); ok && b > 0 {
		s.workMem = b
	}
}

// Snapshot returns every parameter's value, for restore.
func (s *Settings) Snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.values))
	for k, v := range s.values {
		out[k] = v
	}
	return out
}

// Restore sets every parameter back to a snapshot's value (ROLLBACK,
// ROLLBACK TO SAVEPOINT).
func (s *Settings) Restore(vals map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range vals {
		s.values[k] = v
	}
	s.derive()
}

// SetInternal sets a parameter tsdb itself keeps (transaction_isolation).
func (s *Settings) SetInternal(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[name] = value
}

// Get returns a parameter's value.
func (s *Settings) Get(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[strings.ToLower(name)]
}

// Location returns the session time zone, used to print timestamptz values.
func (s *Settings) Location() *time.Location {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zone.loc
}

// EngineZone is the session time zone as the engine's ICU names it.
func (s *Settings) EngineZone() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zone.engine
}

// ResetValue is what RESET sets a parameter to: its value from the
// startup packet, else its default.
func (s *Settings) ResetValue(name string) (string, bool) {
	name = strings.ToLower(name)
	s.mu.Lock()
	v, ok := s.resets[name]
	s.mu.Unlock()
	if ok {
		return v, true
	}
	return Default(name)
}

// StatementTimeout returns statement_timeout (0: none). Like PostgreSQL it
// takes milliseconds or a value with a unit (500ms, 2s, 1min).
func (s *Settings) StatementTimeout() time.Duration {
	v := strings.TrimSpace(s.Get("statement_timeout"))
	if v == "" || v == "0" {
		return 0
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(ms) * time.Millisecond
	}
	v = strings.Replace(strings.ReplaceAll(v, " ", ""), "min", "m", 1)
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	return 0
}

// Reported returns the parameters sent as ParameterStatus, sorted.
func (s *Settings) Reported() [][2]string {
	var out [][2]string
	for k, d := range settingDefs {
		if d.reports {
			out = append(out, [2]string{DisplayName(k), s.Get(k)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Known reports whether name is a parameter tsdb keeps.
func Known(name string) bool {
	_, ok := settingDefs[strings.ToLower(name)]
	return ok
}

// Default is a parameter's value before any SET.
func Default(name string) (string, bool) {
	d, ok := settingDefs[strings.ToLower(name)]
	return d.def, ok
}

// Names are the parameters tsdb keeps, sorted.
func Names() []string {
	keys := make([]string, 0, len(settingDefs))
	for k := range settingDefs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ResetAll is RESET ALL: every parameter a session may change back to its
// default, the fixed ones and those tsdb keeps itself left as they are.
func (s *Settings) ResetAll() {
	for k, d := range settingDefs {
		if d.check == nil || k == "timezone" || k == "datestyle" || k == "client_encoding" || k == "default_transaction_isolation" || k == "default_transaction_read_only" {
			v, _ := s.ResetValue(k)
			_ = s.Set(k, v)
		}
	}
}

// SetSessionDefault sets a parameter's value for a session as it starts,
// which RESET returns to (work_mem, from the engine's memory limit).
func (s *Settings) SetSessionDefault(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[name] = value
	s.resets[name] = value
	s.derive()
}

// checkByteaOutput accepts PostgreSQL's two bytea output formats.
func checkByteaOutput(v string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(v)); f {
	case "hex", "escape":
		return f, nil
	}
	return "", fmt.Errorf("%q", v)
}

// Input is how the session reads date and time literals, now meaning now.
func (s *Settings) Input(now time.Time) Input {
	return Input{Loc: s.Location(), Order: s.DateOrder(), Intervals: s.IntervalStyle(), Dates: s.DateStyle(), Now: now, FloatDigits: s.ExtraFloatDigits()}
}
