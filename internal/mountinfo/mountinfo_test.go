package mountinfo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fixture = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs devtmpfs rw,size=12334416k,mode=755
26 22 254:0 /srv/data /mnt/my\040data rw,relatime shared:1 master:4 - ext4 /dev/vda rw
27 22 0:40 / /tmp/x/mnt rw,relatime - tmpfs /tmp/x/image\040one.img rw,size=1024k
31 22 0:45 / /tmp/f rw,nosuid,nodev,relatime - fuse.crashlab flushproof-crashlab-1-2-3-4 rw,user_id=0
bad line
29 22 0:42 / /broken rw - ext4
30 22 x:1 / /baddev rw - ext4 /dev/x rw
`

func TestParse(t *testing.T) {
	m := Parse(fixture)
	require.Len(t, m, 5, "the malformed lines are skipped")
	assert.Equal(t, Mount{ID: 22, Major: 254, Minor: 0, MountPoint: "/", FSType: "ext4", Source: "/dev/vda"}, m[0])
	assert.Equal(t, "devtmpfs", m[1].FSType)
	assert.Equal(t, "/mnt/my data", m[2].MountPoint, "octal escapes undone")
	assert.Equal(t, "ext4", m[2].FSType, "two optional fields before the separator")
	assert.Equal(t, "/tmp/x/image one.img", m[3].Source)
	assert.True(t, m[4].IsFUSE())
	assert.Equal(t, uint32(45), m[4].Minor, "a FUSE mount's connection number")
	assert.False(t, m[3].IsFUSE())
}

func TestUnescape(t *testing.T) {
	assert.Equal(t, "/mnt/my disk", Unescape(`/mnt/my\040disk`))
	assert.Equal(t, "/a b", Unescape(`/a\040b`))
	assert.Equal(t, "/end ", Unescape(`/end\040`), "an escape at the very end")
	assert.Equal(t, "/plain", Unescape("/plain"))
	assert.Equal(t, `/odd\`, Unescape(`/odd\`))
	assert.Equal(t, `/x\09`, Unescape(`/x\09`), "not three octal digits")
}

func TestRead(t *testing.T) {
	m, err := Read()
	require.NoError(t, err)
	found := false
	for _, e := range m {
		found = found || e.MountPoint == "/"
	}
	assert.True(t, found, "the root is mounted")
}
