// A pgJDBC session against tsdb, run by tests/clients_test.go with the port
// as argument: prepared statements (server-side after a few executions,
// binary transfer), batches, NULLs, DML and an error with recovery.
import java.sql.*;
import java.time.*;

public class Session {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) throws Exception {
        // An optional second argument replaces the TLS settings.
        String tls = args.length > 1 ? args[1] : "sslmode=disable";
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/tsdb?user=tsdb&prepareThreshold=1&" + tls;
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE jdbc (time TIMESTAMPTZ NOT NULL, host TEXT, v DOUBLE PRECISION, n BIGINT, ok BOOLEAN)");
            }
            OffsetDateTime t0 = OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jdbc VALUES (?, ?, ?, ?, ?)")) {
                for (int i = 0; i < 5; i++) {
                    ps.setObject(1, t0.plusSeconds(i));
                    ps.setString(2, "h" + (i % 2));
                    ps.setDouble(3, i / 2.0);
                    ps.setLong(4, i * 10L);
                    ps.setBoolean(5, i % 2 == 0);
                    check(ps.executeUpdate() == 1, "insert count");
                }
                for (int i = 0; i < 20; i++) {
                    ps.setObject(1, t0.plusMinutes(1).plusSeconds(i));
                    ps.setString(2, "batch");
                    ps.setDouble(3, i);
                    ps.setLong(4, i);
                    ps.setBoolean(5, true);
                    ps.addBatch();
                }
                ps.executeBatch();
                ps.setObject(1, t0.plusHours(1));
                ps.setNull(2, Types.VARCHAR);
                ps.setNull(3, Types.DOUBLE);
                ps.setNull(4, Types.BIGINT);
                ps.setNull(5, Types.BOOLEAN);
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*), sum(v) FROM jdbc WHERE time >= ? AND time < ? AND host = ?")) {
                for (int k = 0; k < 3; k++) { // the third run uses a server-side statement
                    ps.setObject(1, t0);
                    ps.setObject(2, t0.plusSeconds(5));
                    ps.setString(3, "h0");
                    try (ResultSet rs = ps.executeQuery()) {
                        check(rs.next(), "row");
                        check(rs.getLong(1) == 3 && rs.getDouble(2) == 3.0, "count/sum " + rs.getLong(1) + " " + rs.getDouble(2));
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT time, host, v, n, ok FROM jdbc WHERE n = ?")) {
                ps.setLong(1, 20);
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next(), "row n=20");
                    check(rs.getObject(1, OffsetDateTime.class).toInstant().equals(t0.plusSeconds(2).toInstant()), "time");
                    check(rs.getString(2).equals("h0") && rs.getDouble(3) == 1.0 && rs.getBoolean(5), "values");
                }
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT host, v FROM jdbc WHERE n IS NULL")) {
                check(rs.next() && rs.getString(1) == null, "NULL row");
            }
            try (PreparedStatement ps = c.prepareStatement("UPDATE jdbc SET v = v + ? WHERE host = ?")) {
                ps.setDouble(1, 100);
                ps.setString(2, "batch");
                check(ps.executeUpdate() == 20, "update count");
            }
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM jdbc WHERE host = ? AND n >= ?")) {
                ps.setString(1, "batch");
                ps.setLong(2, 10);
                check(ps.executeUpdate() == 10, "delete count");
            }
            try (Statement st = c.createStatement()) {
                st.executeQuery("SELECT nope FROM jdbc");
                check(false, "error not raised");
            } catch (SQLException e) {
                check("42703".equals(e.getSQLState()), "sqlstate " + e.getSQLState());
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM jdbc")) {
                check(rs.next() && rs.getLong(1) == 16, "final count");
            }
            // The metadata IDEs and BI tools browse tables with.
            DatabaseMetaData md = c.getMetaData();
            try (ResultSet rs = md.getColumns(null, "public", "jdbc", "%")) {
                StringBuilder cols = new StringBuilder();
                while (rs.next()) {
                    cols.append(rs.getString("COLUMN_NAME")).append(':').append(rs.getString("TYPE_NAME"))
                        .append(':').append(rs.getString("IS_NULLABLE")).append(' ');
                }
                check(cols.toString().equals("time:timestamptz:NO host:text:YES v:float8:YES n:int8:YES ok:bool:YES "), "getColumns " + cols);
            }
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "jdbc")) {
                check(!rs.next(), "getPrimaryKeys: tsdb tables have none");
            }
            try (ResultSet rs = md.getIndexInfo(null, "public", "jdbc", false, true)) {
                check(!rs.next(), "getIndexInfo: tsdb tables have none");
            }
            // A table with keys: its primary key and the indexes behind
            // its keys, as PostgreSQL lists them.
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE jdbc_keyed (time TIMESTAMPTZ NOT NULL, id INT PRIMARY KEY, host TEXT, UNIQUE (host, time))");
            }
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "jdbc_keyed")) {
                check(rs.next() && rs.getString("COLUMN_NAME").equals("id") && rs.getInt("KEY_SEQ") == 1
                    && rs.getString("PK_NAME").equals("jdbc_keyed_pkey") && !rs.next(), "getPrimaryKeys of jdbc_keyed");
            }
            try (ResultSet rs = md.getIndexInfo(null, "public", "jdbc_keyed", true, true)) {
                StringBuilder idx = new StringBuilder();
                while (rs.next()) {
                    idx.append(rs.getString("INDEX_NAME")).append(':').append(rs.getString("COLUMN_NAME"))
                        .append(':').append(rs.getShort("ORDINAL_POSITION")).append(' ');
                }
                check(idx.toString().equals("jdbc_keyed_host_time_key:host:1 jdbc_keyed_host_time_key:time:2 jdbc_keyed_pkey:id:1 "), "getIndexInfo " + idx);
            }
            try (ResultSet rs = md.getTables(null, "public", "jdbc", new String[] {"TABLE"})) {
                check(rs.next() && rs.getString("TABLE_NAME").equals("jdbc"), "getTables");
            }
        }
        System.out.println("pgJDBC session ok");
    }
}
