package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentbot/agentbot/app"
)

// printReviewStats prints reviews' findings per repository, then all of
// them, apart from the fixes' table.
func printReviewStats(w io.Writer, rows []app.ReviewSummary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "REVIEWS\tREVIEWS\tFINDINGS\tPROVEN\tPOSTED\tRESOLVED\tDISMISSED\tCOST\n")
	for _, s := range rows {
		key := s.Key
		if key == "" {
			key = "ALL"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t$%.2f\n", printable(key), s.Reviews, s.Findings, s.Proven, s.Posted, s.Resolved, s.Dismissed, s.Cost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "proven: the finding's test failed on the head and passed on the base, in a fresh sandbox. resolved: its thread was resolved by a later commit.")
	return err
}
