package policy

// PlanMode says whether a fix writes a plan before it changes anything.
type PlanMode string

// Plan modes.
const (
	// PlanOff goes straight to work.
	PlanOff PlanMode = "off"
	// PlanShow posts the plan in the status comment and goes on.
	PlanShow PlanMode = "show"
	// PlanApprove posts the plan and waits, with nothing written, for
	// "/agent approve" or for "/agent note", which revises it.
	PlanApprove PlanMode = "approve"
)

// PlanFor is the policy's plan mode: off unless it says otherwise.
func (p Policy) PlanFor() PlanMode {
	if p.Quality.Plan == "" {
		return PlanOff
	}
	return p.Quality.Plan
}

func checkPlan(b *policyBuilder, v string) (PlanMode, string) {
	s, problem := checkOneOf(string(PlanOff), string(PlanShow), string(PlanApprove))(b, v)
	return PlanMode(s), problem
}
