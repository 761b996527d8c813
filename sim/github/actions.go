package github

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// CIRun is one finished check of a repository's CI, run by another App
// than agentbot: a check suite holding one check run. When GitHub Actions
// ran it, it is also a workflow run whose one job has the check run's id,
// as on GitHub, and keeps a log.
type CIRun struct {
	Repo          string
	SuiteID       int64
	RunID         int64 // the check run's id; the job's for Actions
	WorkflowRunID int64 // 0 unless Actions ran it
	HeadSHA       string
	Name          string
	Conclusion    string
	Title         string
	Summary       string
	Annotations   []Annotation
	Log           string
	Actions       bool
	Actor         string // who pushed HeadSHA: the events' sender
	CompletedAt   time.Time
	logKey        string // the signed download URL's secret
}

// Annotation is a check run's note on a line of a file.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string // notice, warning or failure
	Title     string
	Message   string
}

// CIRunOptions describe a finished check to add. Ref is a branch or a
// commit; Actions says GitHub Actions ran it (so it has a log), otherwise
// another CI App did.
type CIRunOptions struct {
	Ref         string
	Name        string
	Conclusion  string // success, failure, ...
	Title       string
	Summary     string
	Annotations []Annotation
	Log         string
	Actions     bool
	// Actor is who pushed the commit the check ran on, whom GitHub
	// names as the events' sender: the App's bot for its own pushes.
	// Empty means octocat.
	Actor string
}

// The Apps that run the simulated CI: GitHub Actions, with its real id,
// and another CI service.
const (
	actionsAppID = 15368
	otherCIAppID = 9191
)

// AddCIRun records a finished check of repo's CI on o.Ref.
func (s *Server) AddCIRun(repo string, o CIRunOptions) (CIRun, error) {
	s.mu.Lock()
	rp, err := s.repoLocked(repo)
	s.mu.Unlock()
	if err != nil {
		return CIRun{}, err
	}
	sha, err := s.branchSHA(rp.dir, o.Ref)
	if err != nil {
		sha = o.Ref
	}
	if len(sha) != 40 {
		return CIRun{}, fmt.Errorf("githubsim: %q is no branch or commit of %s", o.Ref, repo)
	}
	key := make([]byte, 8)
	_, _ = rand.Read(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &CIRun{Repo: rp.fullName(), SuiteID: s.newID(), RunID: s.newID(), HeadSHA: sha, Name: o.Name,
		Conclusion: o.Conclusion, Title: o.Title, Summary: o.Summary, Annotations: slices.Clone(o.Annotations),
		Log: o.Log, Actions: o.Actions, Actor: cmp.Or(o.Actor, "octocat"), CompletedAt: now(), logKey: hex.EncodeToString(key)}
	if o.Actions {
		c.WorkflowRunID = s.newID()
	}
	s.ciRuns = append(s.ciRuns, c)
	return *c, nil
}

// DeliverCIRun delivers the "completed" event GitHub sends for run: a
// workflow_run for an Actions run, a check_run otherwise.
func (s *Server) DeliverCIRun(ctx context.Context, url string, run CIRun) (*http.Response, error) {
	s.mu.Lock()
	rp, err := s.repoLocked(run.Repo)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	heads, _ := s.branches(rp.dir)
	s.mu.Lock()
	payload := s.envelopeLocked(rp, "completed", cmp.Or(run.Actor, "octocat"))
	c := s.ciCheckRunJSON(rp, &run, heads)
	event := "check_run"
	if run.Actions {
		event = "workflow_run"
		payload["workflow_run"] = obj{
			"id": run.WorkflowRunID, "name": run.Name, "head_sha": run.HeadSHA, "status": "completed",
			"conclusion": run.Conclusion, "pull_requests": c["pull_requests"], "check_suite_id": run.SuiteID,
			"html_url": fmt.Sprintf("%s/actions/runs/%d", rp.htmlURL(s), run.WorkflowRunID),
		}
	} else {
		payload["check_run"] = c
	}
	s.mu.Unlock()
	return s.Deliver(ctx, url, event, payload)
}

// ciAppJSON is the App that ran a CI check.
func (s *Server) ciAppJSON(actions bool) obj {
	id, slug, name := int64(otherCIAppID), "ci-service", "CI Service"
	if actions {
		id, slug, name = actionsAppID, "github-actions", "GitHub Actions"
	}
	t := gitHubTime(s.booted)
	return obj{
		"id": id, "slug": slug, "node_id": nodeID("Integration", id), "client_id": "Iv1." + slug,
		"owner": s.userJSON(s.userLocked("github", "Organization")), "name": name, "description": "",
		"external_url": "https://github.com/features/actions", "html_url": "https://github.com/apps/" + slug,
		"created_at": t, "updated_at": t,
		"permissions": obj{"checks": "write", "contents": "read", "metadata": "read"}, "events": []string{"check_suite"},
	}
}

// ciCheckRunJSON renders a CI run as its check run.
func (s *Server) ciCheckRunJSON(rp *repo, c *CIRun, heads map[string]string) obj {
	m := s.checkRunJSON(rp, &CheckRun{ID: c.RunID, Name: c.Name, HeadSHA: c.HeadSHA, Status: "completed",
		Conclusion: c.Conclusion, Title: c.Title, Summary: c.Summary, StartedAt: c.CompletedAt, CompletedAt: c.CompletedAt,
		ExternalID: fmt.Sprint(c.RunID)}, heads)
	m["app"] = s.ciAppJSON(c.Actions)
	m["check_suite"] = obj{"id": c.SuiteID}
	m["output"].(obj)["annotations_count"] = len(c.Annotations)
	if c.Actions {
		m["details_url"] = fmt.Sprintf("%s/actions/runs/%d/job/%d", rp.htmlURL(s), c.WorkflowRunID, c.RunID)
	}
	return m
}

// suiteJSON renders a check suite of sha holding runs, all by one App.
func (s *Server) suiteJSON(rp *repo, id int64, sha string, app obj, runs []obj, heads map[string]string) obj {
	status, conclusion := "completed", any("success")
	for _, r := range runs {
		switch {
		case r["status"] != "completed":
			status, conclusion = "in_progress", nil
		case conclusion != nil && r["conclusion"] != "success":
			conclusion = r["conclusion"]
		}
	}
	var prs any = []obj{}
	if len(runs) > 0 {
		prs = runs[0]["pull_requests"]
	}
	branch := any(nil)
	for _, name := range sortedKeys(heads) {
		if heads[name] == sha {
			branch = name
			break
		}
	}
	api := fmt.Sprintf("%s/check-suites/%d", rp.apiURL(s), id)
	t := gitHubTime(s.booted)
	return obj{
		"id": id, "node_id": nodeID("CheckSuite", id), "head_branch": branch, "head_sha": sha,
		"status": status, "conclusion": conclusion, "url": api, "before": nil, "after": sha,
		"pull_requests": prs, "app": app, "created_at": t, "updated_at": t,
		"repository": s.repoJSON(rp, false),
		"head_commit": obj{
			"id": sha, "tree_id": sha, "message": "", "timestamp": t,
			"author": obj{"name": "", "email": ""}, "committer": obj{"name": "", "email": ""},
		},
		"latest_check_runs_count": len(runs), "check_runs_url": api + "/check-runs",
		"rerequestable": true, "runs_rerequestable": true,
	}
}

// ciSuitesLocked gathers the check suites of rp on sha, agentbot's own
// (one per check run) and the CI's, each with its runs.
func (s *Server) ciSuitesLocked(rp *repo, sha string, heads map[string]string) []obj {
	var out []obj
	for _, c := range rp.checkRuns {
		if c.HeadSHA == sha {
			out = append(out, s.suiteJSON(rp, c.ID, sha, s.appJSON(), []obj{s.checkRunJSON(rp, c, heads)}, heads))
		}
	}
	for _, c := range s.ciRuns {
		if c.Repo == rp.fullName() && c.HeadSHA == sha {
			out = append(out, s.suiteJSON(rp, c.SuiteID, sha, s.ciAppJSON(c.Actions), []obj{s.ciCheckRunJSON(rp, c, heads)}, heads))
		}
	}
	return out
}

// listSuitesForRef answers checks/list-suites-for-ref; ref is a branch or
// a commit, and app_id narrows the list to one App's suites.
func (s *Server) listSuitesForRef(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "checks")
	if !ok {
		return
	}
	ref := r.PathValue("ref")
	heads, _ := s.branches(rp.dir)
	sha := cmp.Or(heads[strings.TrimPrefix(ref, "heads/")], ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	suites := s.ciSuitesLocked(rp, sha, heads)
	if app := r.URL.Query().Get("app_id"); app != "" {
		suites = slices.DeleteFunc(suites, func(o obj) bool { return fmt.Sprint(o["app"].(obj)["id"]) != app })
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(suites), "check_suites": paginate(w, r, suites)})
}

// listRunsForSuite answers checks/list-for-suite; status=completed keeps
// only finished runs.
func (s *Server) listRunsForSuite(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "checks")
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "check_suite_id")
	if !ok {
		return
	}
	heads, _ := s.branches(rp.dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	runs, found := []obj{}, false
	if c, own := s.checkRuns[id]; own && c.Repo == rp.fullName() {
		runs, found = append(runs, s.checkRunJSON(rp, c, heads)), true
	}
	for _, c := range s.ciRuns {
		if c.Repo == rp.fullName() && c.SuiteID == id {
			runs, found = append(runs, s.ciCheckRunJSON(rp, c, heads)), true
		}
	}
	if !found {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if st := r.URL.Query().Get("status"); st != "" {
		runs = slices.DeleteFunc(runs, func(o obj) bool { return o["status"] != st })
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(runs), "check_runs": paginate(w, r, runs)})
}

// ciRunLocked finds the CI run whose check run (or job) is id.
func (s *Server) ciRunLocked(rp *repo, id int64) *CIRun {
	for _, c := range s.ciRuns {
		if c.Repo == rp.fullName() && c.RunID == id {
			return c
		}
	}
	return nil
}

// listAnnotations answers checks/list-annotations.
func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "checks")
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "check_run_id")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := []obj{}
	if c := s.ciRunLocked(rp, id); c != nil {
		for _, a := range c.Annotations {
			list = append(list, obj{
				"path": a.Path, "blob_href": fmt.Sprintf("%s/blob/%s/%s", rp.htmlURL(s), c.HeadSHA, a.Path),
				"start_line": a.StartLine, "end_line": cmp.Or(a.EndLine, a.StartLine), "start_column": nil, "end_column": nil,
				"annotation_level": cmp.Or(a.Level, "failure"), "title": nullString(a.Title), "message": a.Message, "raw_details": nil,
			})
		}
	} else if c, own := s.checkRuns[id]; !own || c.Repo != rp.fullName() {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}

// jobLogs answers actions/download-job-logs-for-workflow-run as GitHub
// does: a redirect to a short-lived, signed URL that needs no token.
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "actions")
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "job_id")
	if !ok {
		return
	}
	s.mu.Lock()
	c := s.ciRunLocked(rp, id)
	s.mu.Unlock()
	if c == nil || !c.Actions {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Location", fmt.Sprintf("%s/_logs/jobs/%d?sig=%s", s.base, c.RunID, c.logKey))
	w.WriteHeader(http.StatusFound)
}

// serveLog serves a job's log at the signed URL jobLogs redirects to.
func (s *Server) serveLog(w http.ResponseWriter, r *http.Request) {
	id, ok := pathInt(w, r, "job_id")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.ciRuns {
		if c.RunID == id && c.Actions && r.URL.Query().Get("sig") == c.logKey {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte(c.Log))
			return
		}
	}
	http.Error(w, "AuthenticationFailed", http.StatusForbidden)
}
