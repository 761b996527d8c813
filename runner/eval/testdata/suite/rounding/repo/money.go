// Package invoice turns the prices of the catalogue, in dollars, into the
// cents an invoice bills.
package invoice

import "strconv"

// Cents converts an amount in dollars to whole cents.
func Cents(dollars float64) int64 {
	return int64(dollars * 100)
}

// Format renders cents as dollars: 1234 is "$12.34", -5 is "-$0.05".
func Format(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	c := strconv.FormatInt(cents%100, 10)
	if len(c) == 1 {
		c = "0" + c
	}
	return sign + "$" + strconv.FormatInt(cents/100, 10) + "." + c
}
