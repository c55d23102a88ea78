-- Bit strings, bit(n) and bit varying(n), as PostgreSQL 15 answers them:
-- run by psql on tsdb (TestBitStrings) and on PostgreSQL, whose output is
-- testdata/bitstring.pg15.out.
SELECT B'0101' AS b, X'1F' AS x, B'0101'::bit(3) AS cut, B'01'::bit(4) AS padded, B'0101'::varbit(2) AS vcut, '0101'::bit(3) AS text_cut;
SELECT 'B0101'::bit(4) AS b, 'X1f'::bit(8) AS x, 'x1f'::varbit AS v, 5::bit(4) AS i, (-5)::bit(40) AS neg, 5::bit AS one, 5000000000::bit(40) AS big;
SELECT B'0101'::int AS i, B'1111'::int AS f, B'11111111111111111111111111111111'::int AS m, B'0101'::bigint AS b;
SELECT B'111111111111111111111111111111111'::int;
SELECT B'012';
SELECT X'1G';
SELECT '12'::bit(2);
SELECT length(B'0101') AS l, bit_length(B'0101') AS bl, octet_length(B'010101010') AS ol, get_bit(B'0101', 1) AS g, set_bit(B'0101', 0, 1) AS s, bit_count(B'0111') AS c;
SELECT get_bit(B'0101', 7);
SELECT set_bit(B'0101', 0, 2);
SELECT B'0101' >> -1 AS a, B'0101' << 1 AS b, B'0101' >> 1 AS c, B'0101' << 9 AS d, ~B'0101' AS e, B'0101' # B'0011' AS f, B'0101' & B'0011' AS g, B'0101' | B'0011' AS h, B'01' || B'10' AS i;
SELECT B'0101' & B'01';
SELECT B'0101' | B'01';
SELECT B'0101' # B'01';
SELECT B'10' > B'1' AS a, B'01' < B'010' AS b, B'1' = B'1' AS c, B'1' <> B'0' AS d, B'0' < B'00' AS e;
SELECT x FROM (VALUES (B'0101'), (B'1'), (B'10'), (B'0')) v(x) ORDER BY x;
SELECT x, count(*) FROM (VALUES (B'0101'), (B'1'), (B'0101')) v(x) GROUP BY x ORDER BY x DESC;
SELECT bit_and(x), bit_or(x), bit_xor(x) FROM (VALUES (B'0101'), (B'0100'), (B'1100')) v(x);
SELECT bit_and(x) FROM (VALUES (B'0101'), (B'01')) v(x);
SELECT x::bit(3) AS b, x::varbit(3) AS v FROM (VALUES ('0101'::text), ('X1')) v(x);
SELECT n::bit(8) AS b, n::bigint::bit(70) AS w FROM (VALUES (1), (-1), (255)) v(n);
SELECT x::bit(2) AS b, x::varbit(8) AS v FROM (VALUES (B'0110'), (B'1')) v(x);
SELECT x::int AS i FROM (VALUES (B'111111111111111111111111111111111')) v(x);
SELECT x >> n AS r, x << n AS l FROM (VALUES (B'0110', 1), (B'0110', -1), (B'0110', 0)) v(x, n);
CREATE TABLE bt (time timestamptz NOT NULL, b bit(4), v varbit(6), w bit varying, one bit);
INSERT INTO bt VALUES ('2026-01-01 00:00+00', B'0101', B'1', B'101010101', B'1');
INSERT INTO bt VALUES ('2026-01-01 00:01+00', B'010', B'1', B'1', B'1');
INSERT INTO bt VALUES ('2026-01-01 00:02+00', B'0101', B'1010101', B'1', B'1');
INSERT INTO bt VALUES ('2026-01-01 00:03+00', B'0101', B'1', B'1', B'10');
INSERT INTO bt VALUES ('2026-01-01 00:04+00', '1100', 'X3', 'B0', '0');
INSERT INTO bt VALUES ('2026-01-01 00:05+00', '11002', '1', '1', '1');
INSERT INTO bt VALUES ('2026-01-01 00:06+00', 9::bit(4), NULL, X'F0F', NULL);
INSERT INTO bt VALUES ('2026-01-01 00:07+00', 5, NULL, NULL, NULL);
INSERT INTO bt VALUES ('2026-01-01 00:07+00', B'1111', NULL, 5, NULL);
INSERT INTO bt VALUES ('2026-01-01 00:07+00', B'1111', '0101'::varbit(2), '01'::bit(4), '0101'::bit);
INSERT INTO bt SELECT '2026-01-01 00:08+00', B'1111', NULL, 7, NULL;
COPY bt FROM STDIN;
2026-01-02 00:00:00+00	X5	B11	1	1
2026-01-02 00:01:00+00	0011	\N	0000000000000000000000000000000000000000000000000000000000000000000000000001	0
\.
COPY bt FROM STDIN;
2026-01-02 00:02:00+00	X55	B11	1	1
\.
COPY bt FROM STDIN;
2026-01-02 00:02:00+00	0101	1111111	1	1
\.
SELECT b, v, w, one FROM bt ORDER BY time;
CHECKPOINT;
SELECT b, v, w, one, b::int AS n, bit_count(b) AS c, get_bit(b, 0) AS g, b >> 1 AS s FROM bt ORDER BY time;
SELECT b, count(*), bit_or(v) FROM bt WHERE v IS NOT NULL AND length(v) = 2 GROUP BY b ORDER BY b;
SELECT bit_and(b), bit_or(b), bit_xor(b) FROM bt;
SELECT b, v, set_bit(b, 0, 1) AS s FROM bt WHERE b = 'X5' OR v = 'B11' ORDER BY time;
UPDATE bt SET w = 5 WHERE b = B'0101';
UPDATE bt SET w = 'X1' WHERE v = B'11';
BEGIN;
UPDATE bt SET w = 3 WHERE b = B'0101';
ROLLBACK;
UPDATE bt SET b = b # B'1111' WHERE b = B'0101';
UPDATE bt SET b = B'11' WHERE b = B'1010';
UPDATE bt SET v = B'1111111' WHERE v = B'11';
DELETE FROM bt WHERE b = B'0011';
SELECT b, v FROM bt ORDER BY time;
SELECT column_name, data_type, character_maximum_length FROM information_schema.columns WHERE table_name = 'bt' ORDER BY ordinal_position;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'bt'::regclass AND attnum > 0 ORDER BY attnum;
CREATE TEMPORARY TABLE tb (i int, y bit(4), z varbit(3));
COPY tb FROM STDIN NULL 'null';
1	B0101	1
2	B0100	null
3	B1100	111
\.
INSERT INTO tb VALUES (4, B'101', B'1');
INSERT INTO tb VALUES (4, B'1010', B'1111');
UPDATE tb SET y = B'11' WHERE i = 1;
UPDATE tb SET z = B'1111' WHERE i = 1;
UPDATE tb SET y = ~y WHERE i = 2;
SELECT i, y, z, bit_and(y) OVER () AS a FROM tb ORDER BY i;
DROP TABLE bt;
