package testkit

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// The payloads of cmd/agentvalues' blob server, which internal/jsontext's
// benchmarks take too: records of customers and the lines of a web
// service's log, drawn from r, so the same seed makes the same bytes.

// Words the generated records draw on; some are not ASCII, as names and
// messages in real data are.
var (
	blobNames    = []string{"Ana Lima", "Zoë Müller", "José Álvarez", "Søren Berg", "李雷", "Łukasz Nowak", "Chloé Dubois", "Emma Smith", "Noah Johnson", "Aiyana Brown", "Ngozi Okafor", "Ильдар Шайхутдинов"}
	blobCities   = []string{"São Paulo", "Zürich", "Kraków", "Lyon", "Austin", "東京", "Reykjavík", "Lagos", "Montréal", "Berlin"}
	blobStatuses = []string{"active", "active", "active", "pending", "suspended", "closed"}
	blobTags     = []string{"vip", "beta", "newsletter", "trial", "enterprise", "churn-risk", "eu", "us"}
	blobPaths    = []string{"/api/v1/orders", "/api/v1/users", "/api/v1/invoices", "/healthz", "/api/v2/search", "/static/app.js"}
	blobLevels   = []string{"INFO ", "INFO ", "INFO ", "INFO ", "DEBUG", "WARN ", "ERROR"}
	blobProblems = []string{
		"upstream timed out — retrying (attempt 2/5)",
		"slow query: SELECT * FROM orders WHERE customer_id = $1 took 812ms",
		"cache miss for key «user:profile»",
		"connection reset by peer",
	}
)

// blobEpoch is the time of the first generated record.
var blobEpoch = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)

// AppendRows appends a JSON array of customer records to b, stopping
// before b would pass limit bytes.
func AppendRows(b []byte, r *rand.Rand, limit int) []byte {
	b = append(b, '[')
	var row []byte
	for i := 0; ; i++ {
		row = row[:0]
		if i > 0 {
			row = append(row, ',')
		}
		row = append(row, `{"id":`...)
		row = strconv.AppendInt(row, int64(100000+i), 10)
		row = append(row, `,"email":"user`...)
		row = strconv.AppendInt(row, int64(100000+i), 10)
		row = append(row, `@example.com","name":"`...)
		row = append(row, blobNames[r.IntN(len(blobNames))]...)
		row = append(row, `","status":"`...)
		row = append(row, blobStatuses[r.IntN(len(blobStatuses))]...)
		row = append(row, `","balance":`...)
		row = strconv.AppendFloat(row, float64(r.IntN(10000000))/100, 'f', 2, 64)
		row = append(row, `,"created_at":"`...)
		row = blobEpoch.Add(time.Duration(i)*37*time.Second).AppendFormat(row, time.RFC3339)
		row = append(row, `","tags":[`...)
		for j := range r.IntN(4) {
			if j > 0 {
				row = append(row, ',')
			}
			row = append(row, '"')
			row = append(row, blobTags[r.IntN(len(blobTags))]...)
			row = append(row, '"')
		}
		row = append(row, `],"address":{"city":"`...)
		row = append(row, blobCities[r.IntN(len(blobCities))]...)
		row = append(row, `","zip":"`...)
		row = fmt.Appendf(row, "%05d", r.IntN(100000))
		row = append(row, `"},"verified":`...)
		row = strconv.AppendBool(row, r.IntN(3) > 0)
		row = append(row, '}')
		if len(b)+len(row)+1 > limit {
			return append(b, ']')
		}
		b = append(b, row...)
	}
}

// AppendLog appends the lines of a web service's log to b, stopping before
// b would pass limit bytes.
func AppendLog(b []byte, r *rand.Rand, limit int) []byte {
	var line []byte
	for i := 0; ; i++ {
		line = blobEpoch.Add(time.Duration(i)*7919*time.Microsecond).AppendFormat(line[:0], "2006-01-02T15:04:05.000Z07:00")
		level := blobLevels[r.IntN(len(blobLevels))]
		line = append(line, ' ')
		line = append(line, level...)
		line = fmt.Appendf(line, " [worker-%d] req=%08x ", r.IntN(16), r.Uint32())
		switch level {
		case "WARN ", "ERROR":
			line = append(line, blobProblems[r.IntN(len(blobProblems))]...)
		default:
			line = fmt.Appendf(line, "GET %s/%d status=200 bytes=%d dur=%.1fms user=%q",
				blobPaths[r.IntN(len(blobPaths))], r.IntN(1000000), r.IntN(50000), r.Float64()*40, blobNames[r.IntN(len(blobNames))])
		}
		line = append(line, '\n')
		if len(b)+len(line) > limit {
			return b
		}
		b = append(b, line...)
	}
}

// SmallResult returns a JSON tool result of at most n bytes, and no fewer
// than n-40: an object with a short list of rows, the shape of a typical
// small API or query result (the Observe benchmarks' and Tally's).
func SmallResult(n int) []byte {
	const end = `],"next":null}`
	b := []byte(`{"status":"ok","rows":[`)
	for i := 0; ; i++ {
		row := fmt.Appendf(nil, `{"id":%d,"name":"item-%d","ok":true}`, i, i)
		if len(b)+len(",")+len(row)+len(end) > n {
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, row...)
	}
	return append(b, end...)
}
