package ingest

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	rows            prometheus.Counter
	flushes         prometheus.Counter
	flushErrors     prometheus.Counter
	flushedRows     prometheus.Counter
	flushedBytes    prometheus.Counter
	flushSeconds    prometheus.Histogram
	pressureFlushes prometheus.Counter
	waits           prometheus.Counter
	admitted        prometheus.Counter
	rejections      prometheus.Counter
	walLag          prometheus.Gauge
	replaySeconds   prometheus.Gauge
	compactions     prometheus.Counter
	compactedFiles  prometheus.Counter
	retentionRows   prometheus.Counter
	streamedMerges  prometheus.Counter
	// compactionErrors counts groups of files compaction failed to merge.
	compactionErrors prometheus.Counter
	// unavailableTables counts tables with a damaged log or data file;
	// damagedFiles the damaged data files; heldEntries the WAL entries
	// kept at start-up for tables whose log could not be read.
	unavailableTables prometheus.Gauge
	damagedFiles      prometheus.Gauge
	heldEntries       prometheus.Gauge
	// walLost counts WAL sequences start-up found missing.
	walLost prometheus.Gauge
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		rows:            prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_ingest_rows_total", Help: "Rows acknowledged by the write path."}),
		flushes:         prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushes_total", Help: "Parquet files flushed and committed to Delta."}),
		flushErrors:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flush_errors_total", Help: "Flushes that failed and will be retried."}),
		flushedRows:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushed_rows_total", Help: "Rows written to Delta by flushes."}),
		flushedBytes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_flushed_bytes_total", Help: "Parquet bytes written by flushes."}),
		flushSeconds:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tsdb_flush_duration_seconds", Help: "Time to write and commit one file.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		pressureFlushes: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_pressure_flushes_total", Help: "Buckets flushed because the MemBuffer was above its soft limit."}),
		waits:           prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_backpressure_waits_total", Help: "Writes that had to wait for memory or WAL lag."}),
		admitted:        prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_backpressure_admitted_after_wait_total", Help: "Writes admitted after waiting."}),
		rejections:      prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_backpressure_rejections_total", Help: "Writes refused with SQLSTATE 53200 after --write-timeout."}),
		walLag:          prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_unflushed_bytes", Help: "WAL bytes whose rows are not yet in Delta."}),
		replaySeconds:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_replay_seconds", Help: "Duration of the WAL replay at start-up."}),
		compactions:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_compactions_total", Help: "Merged files committed by compaction."}),
		compactedFiles:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_compacted_files_total", Help: "Small files replaced by compaction."}),
		retentionRows:   prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_retention_dropped_rows_total", Help: "Rows dropped because they were older than their table's retention."}),
		streamedMerges:  prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_compaction_streamed_merges_total", Help: "Compaction merges of files in file order, merged a batch at a time rather than sorted in memory."}),
		compactionErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "tsdb_compaction_errors_total",
			Help: "Groups of files compaction could not merge (each logged); their files stay as they are."}),
		unavailableTables: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_tables_unavailable",
			Help: "Tables with a damaged Delta log or data file; statements that need the damaged part fail (see the log and /health)."}),
		damagedFiles: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_data_files_damaged", Help: "Data files that are missing or do not match their add action."}),
		walLost: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_lost_sequences",
			Help: "WAL sequences start-up found missing (the log ends before a sequence Delta recorded); their unflushed rows are lost."}),
		heldEntries: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tsdb_wal_held_entries",
			Help: "WAL entries kept unapplied at start-up because their table is unavailable (a damaged log or file, or a logged change this release cannot apply)."}),
	}
	if r != nil {
		r.MustRegister(m.rows, m.flushes, m.flushErrors, m.flushedRows, m.flushedBytes, m.flushSeconds, m.pressureFlushes,
			m.waits, m.admitted, m.rejections, m.walLag, m.replaySeconds, m.compactions, m.compactedFiles, m.retentionRows, m.streamedMerges,
			m.compactionErrors, m.unavailableTables, m.damagedFiles, m.heldEntries, m.walLost)
	}
	return m
}
