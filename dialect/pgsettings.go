package dialect

import (
	"fmt"
	"strings"

	"tsdb/internal/sqlerr"
)

// pgSessionSettings are the parameters a PostgreSQL 15 session may set
// (pg_settings where context is user, superuser, backend or
// superuser-backend), by name: a startup packet naming one tsdb does not
// implement is accepted with a warning, as PostgreSQL would accept it.
var pgSessionSettings = map[string]bool{
	"datestyle": true, "intervalstyle": true, "timezone": true, "allow_in_place_tablespaces": true,
	"allow_system_table_mods": true, "application_name": true, "array_nulls": true,
	"backend_flush_after": true, "backslash_quote": true, "backtrace_functions": true,
	"bytea_output": true, "check_function_bodies": true, "client_connection_check_interval": true,
	"client_encoding": true, "client_min_messages": true, "commit_delay": true,
	"commit_siblings": true, "compute_query_id": true, "constraint_exclusion": true,
	"cpu_index_tuple_cost": true, "cpu_operator_cost": true, "cpu_tuple_cost": true,
	"cursor_tuple_fraction": true, "deadlock_timeout": true, "debug_discard_caches": true,
	"debug_pretty_print": true, "debug_print_parse": true, "debug_print_plan": true,
	"debug_print_rewritten": true, "default_statistics_target": true,
	"default_table_access_method": true, "default_tablespace": true,
	"default_text_search_config": true, "default_toast_compression": true,
	"default_transaction_deferrable": true, "default_transaction_isolation": true,
	"default_transaction_read_only": true, "dynamic_library_path": true, "effective_cache_size": true,
	"effective_io_concurrency": true, "enable_async_append": true, "enable_bitmapscan": true,
	"enable_gathermerge": true, "enable_hashagg": true, "enable_hashjoin": true,
	"enable_incremental_sort": true, "enable_indexonlyscan": true, "enable_indexscan": true,
	"enable_material": true, "enable_memoize": true, "enable_mergejoin": true,
	"enable_nestloop": true, "enable_parallel_append": true, "enable_parallel_hash": true,
	"enable_partition_pruning": true, "enable_partitionwise_aggregate": true,
	"enable_partitionwise_join": true, "enable_seqscan": true, "enable_sort": true,
	"enable_tidscan": true, "escape_string_warning": true, "exit_on_error": true,
	"extension_destdir": true, "extra_float_digits": true, "force_parallel_mode": true,
	"from_collapse_limit": true, "geqo": true, "geqo_effort": true, "geqo_generations": true,
	"geqo_pool_size": true, "geqo_seed": true, "geqo_selection_bias": true, "geqo_threshold": true,
	"gin_fuzzy_search_limit": true, "gin_pending_list_limit": true, "hash_mem_multiplier": true,
	"idle_in_transaction_session_timeout": true, "idle_session_timeout": true,
	"ignore_checksum_failure": true, "ignore_system_indexes": true, "jit": true,
	"jit_above_cost": true, "jit_debugging_support": true, "jit_dump_bitcode": true,
	"jit_expressions": true, "jit_inline_above_cost": true, "jit_optimize_above_cost": true,
	"jit_profiling_support": true, "jit_tuple_deforming": true, "join_collapse_limit": true,
	"lc_messages": true, "lc_monetary": true, "lc_numeric": true, "lc_time": true,
	"lo_compat_privileges": true, "local_preload_libraries": true, "lock_timeout": true,
	"log_connections": true, "log_disconnections": true, "log_duration": true,
	"log_error_verbosity": true, "log_executor_stats": true, "log_lock_waits": true,
	"log_min_duration_sample": true, "log_min_duration_statement": true,
	"log_min_error_statement": true, "log_min_messages": true, "log_parameter_max_length": true,
	"log_parameter_max_length_on_error": true, "log_parser_stats": true, "log_planner_stats": true,
	"log_replication_commands": true, "log_statement": true, "log_statement_sample_rate": true,
	"log_statement_stats": true, "log_temp_files": true, "log_transaction_sample_rate": true,
	"logical_decoding_work_mem": true, "maintenance_io_concurrency": true,
	"maintenance_work_mem": true, "max_parallel_maintenance_workers": true,
	"max_parallel_workers": true, "max_parallel_workers_per_gather": true, "max_stack_depth": true,
	"min_parallel_index_scan_size": true, "min_parallel_table_scan_size": true,
	"parallel_leader_participation": true, "parallel_setup_cost": true, "parallel_tuple_cost": true,
	"password_encryption": true, "plan_cache_mode": true, "post_auth_delay": true,
	"quote_all_identifiers": true, "random_page_cost": true, "recursive_worktable_factor": true,
	"restrict_nonsystem_relation_kind": true, "row_security": true, "search_path": true,
	"seq_page_cost": true, "session_preload_libraries": true, "session_replication_role": true,
	"standard_conforming_strings": true, "statement_timeout": true, "stats_fetch_consistency": true,
	"synchronize_seqscans": true, "synchronous_commit": true, "tcp_keepalives_count": true,
	"tcp_keepalives_idle": true, "tcp_keepalives_interval": true, "tcp_user_timeout": true,
	"temp_buffers": true, "temp_file_limit": true, "temp_tablespaces": true,
	"timezone_abbreviations": true, "trace_notify": true, "trace_sort": true,
	"track_activities": true, "track_counts": true, "track_functions": true, "track_io_timing": true,
	"track_wal_io_timing": true, "transaction_deferrable": true, "transaction_isolation": true,
	"transaction_read_only": true, "transform_null_equals": true, "update_process_title": true,
	"vacuum_cost_delay": true, "vacuum_cost_limit": true, "vacuum_cost_page_dirty": true,
	"vacuum_cost_page_hit": true, "vacuum_cost_page_miss": true, "vacuum_failsafe_age": true,
	"vacuum_freeze_min_age": true, "vacuum_freeze_table_age": true,
	"vacuum_multixact_failsafe_age": true, "vacuum_multixact_freeze_min_age": true,
	"vacuum_multixact_freeze_table_age": true, "wal_compression": true,
	"wal_consistency_checking": true, "wal_init_zero": true, "wal_recycle": true,
	"wal_sender_timeout": true, "wal_skip_threshold": true, "work_mem": true, "xmlbinary": true,
	"xmloption": true, "zero_damaged_pages": true,
}

// StartupSetting applies one parameter of a startup packet (or of its
// options), as PostgreSQL does at connection: a value tsdb refuses is an
// error that ends the connection; a parameter PostgreSQL has but tsdb
// does not implement, or one tsdb fixes itself (work_mem), is ignored
// with the warning it returns; a name PostgreSQL does not know is an
// error (42704), and a name with a dot a custom setting, accepted.
func (s *Settings) StartupSetting(name, value string) (warning string, err error) {
	lname := strings.ToLower(name)
	if strings.Contains(lname, ".") {
		return "", nil
	}
	def, ok := settingDefs[lname]
	switch {
	case !ok && pgSessionSettings[lname]:
		return fmt.Sprintf("parameter %q is ignored: tsdb does not implement it", name), nil
	case !ok:
		return "", sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	case def.fixed && value != s.Get(lname):
		return fmt.Sprintf("parameter %q is ignored: tsdb sets it (%s)", name, s.Get(lname)), nil
	}
	if err := s.Set(lname, value); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.resets[lname] = s.values[lname]
	s.mu.Unlock()
	return "", nil
}
