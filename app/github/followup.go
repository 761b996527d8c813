package github

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// ciPermissions are what reading a GitHub Actions job's log needs.
var ciPermissions = app.TokenPermissions{Actions: "read"}

// actionsSlug is GitHub Actions' App.
const actionsSlug = "github-actions"

// ReviewComments returns the inline comments of review reviewID on pull
// request repo#pull, in the order they were made; the replies in their
// threads are not the review's.
func (i *Installation) ReviewComments(ctx context.Context, repo string, pull int, reviewID int64) ([]app.InlineComment, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	var out []app.InlineComment
	opts := &gh.ListOptions{PerPage: 100}
	for {
		cs, resp, err := i.api.PullRequests.ListReviewComments(ctx, owner, name, pull, reviewID, opts)
		if err != nil {
			return nil, fmt.Errorf("list the comments of review %d on %s#%d: %w", reviewID, repo, pull, err)
		}
		for _, c := range cs {
			line := c.GetLine()
			if line == 0 {
				line = c.GetOriginalLine() // the comment is on an outdated diff
			}
			out = append(out, app.InlineComment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Path: c.GetPath(),
				Line: line, DiffHunk: c.GetDiffHunk(), Body: c.GetBody()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CIChecks returns the latest finished check runs on commit sha of repo,
// by every App but agentbot, newest first; name, when set, keeps only the
// runs of that name by the App appID. Failing runs come with their
// annotations and, for GitHub Actions, the tail of the job's log.
func (i *Installation) CIChecks(ctx context.Context, repo, sha, name string, appID int64) ([]app.CICheck, error) {
	owner, repoName, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	suiteOpts := &gh.ListCheckSuiteOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	if appID != 0 {
		suiteOpts.AppID = gh.Int(int(appID))
	}
	var out []app.CICheck
	for {
		suites, resp, err := i.api.Checks.ListCheckSuitesForRef(ctx, owner, repoName, sha, suiteOpts)
		if err != nil {
			return nil, fmt.Errorf("list check suites on %s of %s: %w", sha, repo, err)
		}
		for _, s := range suites.CheckSuites {
			if s.GetApp().GetID() == i.parent.cfg.AppID {
				continue // agentbot's own check runs say how its tasks went
			}
			runs, err := i.suiteRuns(ctx, owner, repoName, s, name)
			if err != nil {
				return nil, fmt.Errorf("check runs of suite %d on %s: %w", s.GetID(), repo, err)
			}
			out = append(out, runs...)
		}
		if resp.NextPage == 0 {
			break
		}
		suiteOpts.Page = resp.NextPage
	}
	// Newest first; GitHub's ids grow, so they order runs finished within
	// the same second.
	slices.SortFunc(out, func(a, b app.CICheck) int {
		return cmp.Or(b.CompletedAt.Compare(a.CompletedAt), cmp.Compare(b.ID, a.ID))
	})
	for k := range out {
		if !app.CIFailed(out[k].Conclusion) {
			continue
		}
		if err := i.describeFailure(ctx, owner, repoName, &out[k]); err != nil {
			return nil, fmt.Errorf("read why %s failed on %s: %w", out[k].Name, repo, err)
		}
	}
	return out, nil
}

// suiteRuns lists a suite's finished check runs, keeping only those
// called name when it is set.
func (i *Installation) suiteRuns(ctx context.Context, owner, repo string, s *gh.CheckSuite, name string) ([]app.CICheck, error) {
	opts := &gh.ListCheckRunsOptions{Status: gh.String("completed"), Filter: gh.String("latest"), ListOptions: gh.ListOptions{PerPage: 100}}
	if name != "" {
		opts.CheckName = gh.String(name)
	}
	var out []app.CICheck
	for {
		runs, resp, err := i.api.Checks.ListCheckRunsCheckSuite(ctx, owner, repo, s.GetID(), opts)
		if err != nil {
			return nil, err
		}
		for _, r := range runs.CheckRuns {
			if name != "" && r.GetName() != name {
				continue
			}
			out = append(out, app.CICheck{
				ID: r.GetID(), Name: r.GetName(), AppID: s.GetApp().GetID(), AppSlug: s.GetApp().GetSlug(),
				Conclusion: r.GetConclusion(), Title: r.GetOutput().GetTitle(),
				Summary: app.FitText(r.GetOutput().GetSummary(), app.CISummaryBytes),
				HTMLURL: r.GetHTMLURL(), CompletedAt: r.GetCompletedAt().Time,
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// describeFailure reads a failing check's annotations and, for GitHub
// Actions, the tail of its job's log.
func (i *Installation) describeFailure(ctx context.Context, owner, repo string, c *app.CICheck) error {
	notes, _, err := i.api.Checks.ListCheckRunAnnotations(ctx, owner, repo, c.ID, &gh.ListOptions{PerPage: app.CIAnnotations})
	if err != nil {
		return fmt.Errorf("annotations: %w", err)
	}
	for _, a := range notes {
		c.Annotations = append(c.Annotations, app.CIAnnotation{Path: a.GetPath(), StartLine: a.GetStartLine(), EndLine: a.GetEndLine(),
			Level: a.GetAnnotationLevel(), Title: a.GetTitle(), Message: a.GetMessage()})
	}
	if c.AppSlug != actionsSlug {
		return nil
	}
	if c.Log, c.LogCut, err = i.jobLogTail(ctx, owner, repo, c.ID); err != nil {
		// Without the log (an installation that has not granted
		// actions: read, a log already expired) the summary and the
		// annotations still say much.
		i.parent.cfg.Logger.WarnContext(ctx, "job log unavailable", "repo", owner+"/"+repo, "job", c.ID, "err", err)
	}
	return nil
}

// jobLogTail downloads the tail of GitHub Actions job id's log. Its API
// answers with a redirect to a signed URL, which is fetched without the
// token; only the last app.CILogTailBytes are kept.
func (i *Installation) jobLogTail(ctx context.Context, owner, repo string, id int64) (string, bool, error) {
	ci, err := i.parent.client(i.id, i.repo, ciPermissions)
	if err != nil {
		return "", false, err
	}
	u, _, err := ci.api.Actions.GetWorkflowJobLogs(ctx, owner, repo, id, 0)
	if err != nil {
		return "", false, fmt.Errorf("job %d's log: %w", id, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", false, err
	}
	resp, err := (&http.Client{Transport: i.parent.cfg.Transport, Timeout: time.Minute}).Do(req)
	if err != nil {
		return "", false, fmt.Errorf("download job %d's log: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", false, fmt.Errorf("download job %d's log: %s", id, resp.Status)
	}
	t := &tail{max: app.CILogTailBytes}
	if _, err := io.Copy(t, io.LimitReader(resp.Body, app.CILogFetchBytes)); err != nil {
		return "", false, fmt.Errorf("download job %d's log: %w", id, err)
	}
	text, cut := t.text()
	return text, cut, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	max  int
	buf  []byte
	seen int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.seen += int64(len(p))
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// text is the tail from the first whole line on, and whether anything
// before it was left out.
func (t *tail) text() (string, bool) {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	cut := t.seen > int64(len(b))
	if cut {
		if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
			b = b[nl+1:]
		}
	}
	return string(bytes.ToValidUTF8(b, nil)), cut
}
