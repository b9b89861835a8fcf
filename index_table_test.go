package values

import (
	"strings"
	"testing"
)

// Tables are right or not recognized: each case says what the preview
// must hold, or that it is not a table.
func TestTablePreview(t *testing.T) {
	runDocCases(t, []docCase{{
		name: "psql: rule under the header, a footer",
		text: " id | name  | active\n----+-------+--------\n  1 | alice | t\n  2 | bob   | f\n  3 | carol | t\n(3 rows)\n",
		want: []string{"table(rows=3, cols=3,", "format=pipe, header=[id, name, active], columns={id: number 1..3, name: \"alice\"|\"bob\"|\"carol\", active: \"t\"|\"f\"}", `"  3 | carol | t"`},
		not:  []string{"(3 rows)\""},
	}, {
		name: "mysql: boxes",
		text: "+----+-------+\n| id | name  |\n+----+-------+\n|  1 | alice |\n|  2 | bob   |\n+----+-------+\n",
		want: []string{"table(rows=2, cols=2,", "format=pipe, header=[id, name]"},
	}, {
		name: "Markdown: alignment colons",
		text: "| host | up |\n|:-----|---:|\n| a | true |\n| b | false |\n",
		want: []string{"table(rows=2, cols=2,", "format=markdown, header=[host, up], columns={host: \"a\"|\"b\", up: bool}"},
	}, {
		name: "kubectl: a header of capitals over values",
		text: "NAME                     READY   STATUS    RESTARTS   AGE\nweb-7d4b9c8f5-abcde      1/1     Running   0          3d\nweb-7d4b9c8f5-fghij      0/1     Pending   2          5m\ndb-0                     1/1     Running   0          12d\n",
		want: []string{"table(rows=3, cols=5,", "header=[NAME, READY, STATUS, RESTARTS, AGE]", `STATUS: "Running"|"Pending", RESTARTS: number 0..2`},
	}, {
		name: "a TSV without a header after a comment block",
		text: "# exported\n# by a tool\n" + strings.Repeat("a1\tb2\tc3\n", 5) + "x9\ty8\tz7\n",
		want: []string{"table(rows=6, cols=3,", "format=tsv, header=none, columns={1: \"a1\"|\"x9\", 2: \"b2\"|\"y8\", 3: \"c3\"|\"z7\"}"},
	}, {
		name: "a changelog is not a table",
		text: strings.Repeat("pkg (1.0-1) unstable; urgency=medium\n\n  * Fix a bug.\n  * Add a feature.\n\n -- A Person <a@example.com>  Mon, 01 Jan 2026 00:00:00 +0000\n\n", 8),
		not:  []string{"table("},
	}, {
		name: "a CSV whose first row is data like the rest is not a table",
		text: "alice,paris\nbob,london\ncarol,rome\n",
		not:  []string{"table("},
	}, {
		name: "a log whose lines are alike is not a table",
		text: strings.Repeat("2026-12-02T12:00:00Z INFO request ok path=/v1/items status=200\n", 50),
		not:  []string{"table("},
	}, {
		name: "two columns without a header are not enough",
		text: "alpha     1\nbeta      2\ngamma     3\n",
		not:  []string{"table("},
	}, {
		name: "pipes in some lines of a log are not a table",
		text: "run: a | b\nok\nrun: c | d\n",
		not:  []string{"table("},
	}, {
		name: "a row whose cell overflows its column",
		text: "USER       PID   RSS COMMAND\nroot         1   120 init\nwww-data 123456 4123456 nginx: worker\nroot        22    88 sh -c x\n",
		want: []string{"table(rows=3, cols=4,", "header=[USER, PID, RSS, COMMAND]", "PID: number 1..123456, RSS: number 88..4123456"},
	}})
}
