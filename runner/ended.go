package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
)

// ended is how a task ends, or pauses, before its change is proposed: a
// refusal, nothing to do, a failure. A step returns it as its error, so
// that it unwinds the steps that hold the task's workspace, sandboxes and
// issue, and the reporter says it once (reporter.ended), while the task
// still holds its issue.
type ended struct {
	state app.State
	body  string // the status comment; "" for a task that ends without a word on GitHub
	step  string // what "agentbot tasks" shows; the state when ""
	// refusal is why an admission refused the task, for the audit log.
	refusal string
	// loop and failure are a change that failed, reported with its check
	// run.
	loop    *agent.State
	failure text.Failure
	// check is the task's check run, when it ends with one other than a
	// failed change's.
	check      *app.CheckOutput
	conclusion app.Conclusion
}

// withCheck is e ending with the check run out, concluded c; the
// reporter adds the trace of the task's loop, when it ran one.
func (e *ended) withCheck(c app.Conclusion, out app.CheckOutput) *ended {
	e.check, e.conclusion = &out, c
	return e
}

func (e *ended) Error() string {
	return fmt.Sprintf("the task ended %s: %s", e.state, cmp.Or(e.step, text.FirstLine(e.body)))
}

// finished ends a task in state, its status comment saying body.
func finished(state app.State, body, step string) *ended {
	return &ended{state: state, body: body, step: step}
}

// refused ends a task that admission refused, saying why.
func refused(err error) *ended {
	msg := app.ErrorMessage(err)
	return &ended{state: app.StateRefused, body: msg, refusal: msg}
}

// ignored ends a task that was no command after all, or one nobody asked
// for in words, without a word on GitHub: why is its record's step.
func ignored(why string) *ended { return &ended{state: app.StateRefused, step: why} }

// failed ends a task whose change failed, the loop having ended as st.
func failed(st *agent.State, f text.Failure) *ended {
	return &ended{state: app.StateFailed, loop: st, failure: f}
}

// paused leaves a task waiting for approval at step, holding nothing, its
// status comment saying body when set: an approval or a note takes it up
// again.
func paused(step, body string) *ended {
	return &ended{state: app.StateAwaitingApproval, step: step, body: body}
}

// ended reports err when it says how the task ended (*ended), and returns
// what the report returned; any other err is returned as it is.
func (rp *reporter) ended(ctx context.Context, err error) error {
	e, ok := errors.AsType[*ended](err)
	if !ok {
		return err
	}
	switch {
	case e.loop != nil:
		return rp.fail(ctx, e.loop, e.failure)
	case e.state == app.StateAwaitingApproval:
		if err := rp.state(ctx, e.state, e.step); err != nil || e.body == "" {
			return err
		}
		return rp.say(ctx, e.body)
	}
	if out := e.check; out != nil {
		if out.Text == "" && rp.acct.run != nil {
			out.Text = rp.checkText(ctx, rp.acct.run)
		}
		if err := rp.completeCheck(ctx, e.conclusion, *out); err != nil {
			return err
		}
	}
	if e.refusal != "" {
		rp.tk.log.Info("refused", "reason", e.refusal)
		if err := rp.admission(ctx, false, e.refusal); err != nil {
			return err
		}
	}
	if e.body == "" {
		return rp.ignore(ctx, e.step)
	}
	return rp.finish(ctx, e.state, e.body, e.step)
}
