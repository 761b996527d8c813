package invoice

import "testing"

func TestInvoiceLine(t *testing.T) {
	if got := Format(Cents(0.29)); got != "$0.29" {
		t.Errorf("an item priced at 0.29 is billed %s, want $0.29", got)
	}
	if got := Format(Cents(12.5)); got != "$12.50" {
		t.Errorf("an item priced at 12.5 is billed %s, want $12.50", got)
	}
}
