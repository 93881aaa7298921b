package refresher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/refresher/refresher/internal/teststore"
	"github.com/refresher/refresher/policy"
	"github.com/refresher/refresher/redisio"
)

// A worker that quotes a URL whole (user information, a token parameter) in
// its status and reasons does not get the secret stored: the service
// redacts every URL of a result before it writes the row.
func TestResultURLsRedactedBeforeStored(t *testing.T) {
	t.Parallel()
	const secret = "S3cretUrlPw1"
	b := setup(t, setupOpts{store: teststore.SQLite, timeout: time.Hour})
	b.insert("m1")
	b.start(nil)
	job := b.popJob()
	b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "status", Status: "reading https://h/a.csv?token=" + secret})
	st := b.waitFor("m1", "status stored", func(s policy.State) bool { return s.Status != "" })
	require.Equal(t, "reading https://h/a.csv?token=xxxxx", st.Status)

	b.send(redisio.Result{UID: "m1", AttemptUID: job.AttemptUID, Type: "failure", Permanent: true,
		Reason:             "GET http://user:" + secret + "@h/a.csv: HTTP 404",
		UserFriendlyReason: "Provided URL is invalid: http://user:" + secret + "@h/a.csv"})
	st = b.waitFor("m1", "disabled", func(s policy.State) bool { return s.Disabled() })
	require.Equal(t, "Provided URL is invalid: http://xxxxx@h/a.csv", st.DisabledReason)
	require.Equal(t, "GET http://xxxxx@h/a.csv: HTTP 404", st.LastError)
}
