// pgJDBC transactions against tsdb, run by tests/clients_test.go with the
// port as argument: setAutoCommit(false) with commit and rollback, a
// savepoint, a rollback after an error, and generated keys (pgJDBC adds
// RETURNING to the INSERT).
import java.sql.*;
import java.time.*;

public class Transactions {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static long count(Connection c, String where) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM jtx WHERE " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/tsdb?user=tsdb&sslmode=disable&prepareThreshold=1";
        OffsetDateTime t0 = OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);
        try (Connection c = DriverManager.getConnection(url); Connection other = DriverManager.getConnection(url)) {
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE jtx (time TIMESTAMPTZ NOT NULL, host TEXT, v BIGINT)");
            }
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jtx VALUES (?, ?, ?)")) {
                for (int i = 0; i < 10; i++) {
                    ps.setObject(1, t0.plusSeconds(i));
                    ps.setString(2, "h" + (i % 2));
                    ps.setLong(3, i);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            check(count(c, "true") == 10, "the transaction sees its rows");
            check(count(other, "true") == 0, "another connection sees uncommitted rows");
            c.rollback();
            check(count(c, "true") == 0, "rolled-back rows remain");

            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jtx VALUES (?, ?, ?)")) {
                for (int i = 0; i < 10; i++) {
                    ps.setObject(1, t0.plusSeconds(i));
                    ps.setString(2, "h" + (i % 2));
                    ps.setLong(3, i);
                    ps.executeUpdate();
                }
            }
            c.commit();
            check(count(other, "true") == 10, "committed rows are visible to others");

            // A savepoint: the UPDATE after it is undone, the DELETE before stays.
            try (Statement st = c.createStatement()) {
                check(st.executeUpdate("DELETE FROM jtx WHERE v = 0") == 1, "delete count");
                Savepoint sp = c.setSavepoint("before_update");
                check(st.executeUpdate("UPDATE jtx SET v = v * 100 WHERE host = 'h1'") == 5, "update count");
                c.rollback(sp);
                c.releaseSavepoint(sp);
            }
            c.commit();
            check(count(other, "true") == 9 && count(other, "v >= 100") == 0, "savepoint rollback");

            // An error fails the transaction; rollback recovers it.
            try (Statement st = c.createStatement()) {
                st.executeUpdate("DELETE FROM jtx WHERE host = 'h1'");
                try {
                    st.executeQuery("SELECT nope FROM jtx");
                    check(false, "error not raised");
                } catch (SQLException e) {
                    check("42703".equals(e.getSQLState()), "state " + e.getSQLState());
                }
                try {
                    st.executeQuery("SELECT 1");
                    check(false, "a statement in a failed transaction ran");
                } catch (SQLException e) {
                    check("25P02".equals(e.getSQLState()), "state " + e.getSQLState());
                }
            }
            c.rollback();
            check(count(other, "host = 'h1'") == 5, "the failed transaction's delete was undone");

            // Generated keys: pgJDBC appends RETURNING to the INSERT.
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jtx VALUES (?, ?, ?)", new String[] {"host", "v"})) {
                ps.setObject(1, t0.plusMinutes(1));
                ps.setString(2, "gen");
                ps.setLong(3, 77);
                check(ps.executeUpdate() == 1, "insert count");
                try (ResultSet keys = ps.getGeneratedKeys()) {
                    check(keys.next() && "gen".equals(keys.getString(1)) && keys.getLong(2) == 77, "generated keys");
                }
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("UPDATE jtx SET v = v + 1 WHERE host = 'gen' RETURNING v")) {
                check(rs.next() && rs.getLong(1) == 78, "UPDATE … RETURNING");
            }
            c.commit();
            check(count(other, "host = 'gen' AND v = 78") == 1, "committed RETURNING rows");
        }
        System.out.println("pgJDBC transactions ok");
    }
}
