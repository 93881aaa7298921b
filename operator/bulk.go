package operator

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/refresher/refresher/models"
)

// BulkEnableRequest is the body of POST /api/v1/kinds/{kind}/enable.
type BulkEnableRequest struct {
	// ReasonLike selects disabled models by their reason with SQL LIKE
	// semantics: % any text, _ one character, \ escapes; case-insensitive.
	// Required ("%" for every disabled model).
	ReasonLike string `json:"reason_like"`
	// DisabledSince, RFC 3339, keeps only models disabled at or after it
	// (the incident's start). Optional.
	DisabledSince string `json:"disabled_since"`
	// DryRun counts and samples the models without changing them.
	DryRun bool `json:"dry_run"`
}

// BulkEnableResult is the answer of a bulk re-enable.
type BulkEnableResult struct {
	DryRun  bool `json:"dry_run"`
	Matched int  `json:"matched"`
	Enabled int  `json:"enabled"`
	// Sample is the first matched models (at most 20).
	Sample []ModelItem `json:"sample"`
}

// bulkPage is how many disabled models one page reads and enables.
const bulkPage = 500

// likeRegexp compiles a SQL LIKE pattern into an anchored, case-insensitive
// regular expression.
func likeRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`(?is)^`)
	esc := false
	for _, r := range pattern {
		switch {
		case esc:
			b.WriteString(regexp.QuoteMeta(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			b.WriteString(`.*`)
		case r == '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if esc {
		return nil, fmt.Errorf("reason_like %q ends with a lone \\ (write \\\\ for a backslash)", pattern)
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

func (s *Server) apiBulkEnable(w http.ResponseWriter, r *http.Request, k *Kind) {
	var req BulkEnableRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	res, status, err := s.BulkEnable(r.Context(), k, req)
	if status == http.StatusBadRequest {
		writeError(w, status, err.Error())
		return
	}
	if err != nil {
		s.internal(w, "re-enable models", err)
		return
	}
	if !req.DryRun {
		s.o.Logger.Info("operator: bulk enable", "kind", k.Name, "by", actor(r.Context()),
			"reason_like", req.ReasonLike, "disabled_since", req.DisabledSince, "enabled", res.Enabled)
		s.invalidate()
	}
	writeJSON(w, http.StatusOK, res)
}

// BulkEnable re-enables (or with DryRun counts) k's disabled models whose
// reason matches req. It pages through the disabled models by key and
// enables each page's matches in one transaction (refresher.Admin.Enable), so a
// large incident does not hold locks for long. The status is 400 when req
// is wrong.
func (s *Server) BulkEnable(ctx context.Context, k *Kind, req BulkEnableRequest) (BulkEnableResult, int, error) {
	res := BulkEnableResult{DryRun: req.DryRun, Sample: []ModelItem{}}
	if req.ReasonLike == "" {
		return res, http.StatusBadRequest, fmt.Errorf(`reason_like is required: a SQL LIKE pattern such as "Cannot refresh%%" ("%%" for every disabled model)`)
	}
	re, err := likeRegexp(req.ReasonLike)
	if err != nil {
		return res, http.StatusBadRequest, err
	}
	var since time.Time
	if req.DisabledSince != "" {
		if since, err = time.Parse(time.RFC3339Nano, req.DisabledSince); err != nil {
			return res, http.StatusBadRequest, fmt.Errorf("disabled_since %q: not an RFC 3339 time (e.g. 2025-06-10T09:00:00Z)", req.DisabledSince)
		}
	}
	now := s.o.Now()
	q := models.ListQuery{State: models.StateDisabled, Now: now, LateAfter: k.LateAfter, Limit: bulkPage}
	for {
		page, err := k.Store.List(ctx, k.Table, q)
		if err != nil {
			return res, 0, err
		}
		var keys []string
		for _, row := range page.Rows {
			if !re.MatchString(row.State.DisabledReason) || row.State.DisabledAt.Before(since) {
				continue
			}
			res.Matched++
			if len(res.Sample) < 20 {
				res.Sample = append(res.Sample, item(row, now, k.LateAfter))
			}
			keys = append(keys, row.Key)
		}
		if !req.DryRun && len(keys) > 0 {
			changes, err := s.acting(ctx, k).Enable(ctx, k.Table, keys, now)
			if err != nil {
				return res, 0, err
			}
			for _, c := range changes {
				if c.Found {
					res.Enabled++
				}
			}
		}
		if page.Complete() {
			return res, 0, nil
		}
		q.After = page.Next
	}
}
