package data

import "testing"

func TestOutcomesValid(t *testing.T) {
	if len(Outcomes) != 12 {
		t.Fatalf("DESIGN.md lists 12 outcomes, have %d", len(Outcomes))
	}
	for _, o := range Outcomes {
		if !o.Valid() {
			t.Errorf("%s not valid", o)
		}
	}
	if Outcome("fine").Valid() {
		t.Error("unknown outcome valid")
	}
}
