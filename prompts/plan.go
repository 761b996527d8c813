package prompts

// Plan renders the system prompt of a plan written before a fix: read,
// then answer with the plan under fixed headings.
func Plan(d SystemData) (string, error) { return render("plan.tmpl", d) }
