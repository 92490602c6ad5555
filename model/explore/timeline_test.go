package explore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTimelineColumns(t *testing.T) {
	got := Timeline([]string{"A", "device"}, []Step{{Actor: 0, Text: "W1 submit b0"}, {Actor: 1, Text: "W1 lands"}})
	assert.Equal(t, ""+
		"step | A            | device\n"+
		"   1 | W1 submit b0 |\n"+
		"   2 |              | W1 lands\n", got)
}
