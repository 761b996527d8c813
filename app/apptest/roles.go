package apptest

import "context"

// Roles answers GitHub's collaborator-permission question from Table, a
// login's role on acme/app (none elsewhere, and for whoever is missing),
// counting the lookups; Err, when set, is every answer.
type Roles struct {
	Table map[string]string
	Calls int
	Err   error
}

// Permission returns login's role on repo.
func (r *Roles) Permission(_ context.Context, repo, login string) (string, error) {
	r.Calls++
	if r.Err != nil {
		return "", r.Err
	}
	if role, ok := r.Table[login]; ok && repo == "acme/app" {
		return role, nil
	}
	return "none", nil
}
