package crashlab

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// A recording saved to a file (LabOptions.Save), so that its crash
// states can be replayed later, in parts on many machines
// (LabOptions.Shard), or one at a time (BuildState). The file is
//
//	FPCLREC1\n
//	one line of JSON: the Recording without its ops
//	the log as the recorder wrote it (log.go)
//
// Its ID is the start of the SHA-256 of the whole file: two runs over the
// same ID replayed the same recording.

const recordingMagic = "FPCLREC1\n"

// Recording is what a run recorded: the file system and image, the log,
// the position at which mkfs had finished, and the acknowledgements.
type Recording struct {
	FS        FS       `json:"fs"`
	ImageSize int64    `json:"image_size"`
	Ready     uint64   `json:"ready"` // the log's position when mkfs had finished
	Workload  Workload `json:"workload"`
	Writers   int      `json:"writers,omitempty"` // built-in workloads
	Records   int      `json:"records,omitempty"`
	Command   []string `json:"command,omitempty"`
	// Acks are a command's acknowledgements; RecordAcks a built-in
	// workload's (writer, record, position).
	Acks       []Ack       `json:"acks,omitempty"`
	RecordAcks []RecordAck `json:"record_acks,omitempty"`
	Ops        []Op        `json:"-"`
	ID         string      `json:"-"`
}

// RecordAck is one record a built-in workload acknowledged: writer W's
// record I, once the log held Seq ops.
type RecordAck struct {
	W   int    `json:"w"`
	I   int    `json:"i"`
	Seq uint64 `json:"seq"`
}

// save writes r to path, a new file: an existing one is not overwritten.
// The log is copied from logPath as it streams, not held in memory.
func (r *Recording) save(path string, logPath string) (err error) {
	log, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	head, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("save the recording: %s exists, and crashlab does not overwrite it", path)
		}
		return fmt.Errorf("save the recording: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path) // made here: nothing of the user's
			err = fmt.Errorf("save the recording: %w", err)
		}
	}()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	if _, err := io.WriteString(w, recordingMagic+string(head)+"\n"); err != nil {
		return err
	}
	if _, err := io.Copy(w, log); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	r.ID = hex.EncodeToString(h.Sum(nil))[:16]
	return nil
}

// LoadRecording reads a recording that LabOptions.Save wrote.
func LoadRecording(path string) (*Recording, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the recording: %w", err)
	}
	rest, ok := bytes.CutPrefix(raw, []byte(recordingMagic))
	if !ok {
		return nil, fmt.Errorf("read the recording %s: not a crashlab recording (crashlab -save writes them)", path)
	}
	head, log, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("read the recording %s: no header line", path)
	}
	var r Recording
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("read the recording %s: header: %w", path, err)
	}
	if r.Ops, err = parseLog(path, log); err != nil {
		return nil, err
	}
	if r.FS != Ext4 && r.FS != XFS || r.ImageSize <= 0 || r.Workload == "" {
		return nil, fmt.Errorf("read the recording %s: header: file system %q, image size %d, workload %q", path, r.FS, r.ImageSize, r.Workload)
	}
	if len(r.Command) == 0 != (r.Workload != CommandWorkload) {
		return nil, fmt.Errorf("read the recording %s: header: workload %q with command %q", path, r.Workload, r.Command)
	}
	sum := sha256.Sum256(raw)
	r.ID = hex.EncodeToString(sum[:])[:16]
	return &r, nil
}

// BuildState rebuilds state index of recording r, its states made with
// opt's state options (Random, Seed, Epoch, K, as the run that reported it
// had them), into dir, which must not exist yet: dir/image, the image a
// crash leaves (loop-mountable); dir/acks, the acknowledgements the state
// is held to, as the checker reads them; dir/state, its description.
func BuildState(r *Recording, opt LabOptions, index int, dir string) (CrashState, error) {
	states, _ := LabStates(r.Ops, opt, r.Ready)
	if index < 0 || index >= len(states) {
		return CrashState{}, fmt.Errorf("state %d: with these options (-replays %d -seed %d%s) the recording has states 0 to %d", index, opt.Random, opt.Seed, kText(opt), len(states)-1)
	}
	st := states[index]
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return st, fmt.Errorf("keep the state in %s: it exists, and crashlab does not write into it", dir)
		}
		return st, fmt.Errorf("keep the state: %w", err)
	}
	if err := st.Build(dir+"/image", r.ImageSize, r.Ops); err != nil {
		return st, err
	}
	var acks bytes.Buffer
	for _, a := range ackedBy(r.Acks, st.Cut) {
		acks.WriteString(a.String() + "\n")
	}
	for _, a := range r.RecordAcks {
		if acknowledgedBy(a.Seq, st.Cut) {
			fmt.Fprintf(&acks, "w%d %d\n", a.W, a.I)
		}
	}
	if err := os.WriteFile(dir+"/acks", acks.Bytes(), 0o644); err != nil {
		return st, err
	}
	desc := st.Describe() + "\n"
	for _, c := range st.Changes {
		desc += "  " + c.String() + "\n"
	}
	return st, os.WriteFile(dir+"/state", []byte(desc), 0o644)
}

// kText is opt's -k for a message.
func kText(opt LabOptions) string {
	if !opt.Epoch {
		return ""
	}
	return fmt.Sprintf(" -k %d", opt.K)
}
