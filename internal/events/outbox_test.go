package events

import (
	"reflect"
	"testing"
)

// TestPackedEntryReadsAsItsFields: an entry the session relay copied packed (one field, the
// outbox value) decodes to the same event as the same event written field by field, and a
// packed value without every line is corrupt, never served.
func TestPackedEntryReadsAsItsFields(t *testing.T) {
	fields := map[string]string{FieldType: string(SessionCreated), FieldTime: "1795735777019",
		FieldTenant: "acme", FieldSubject: "s_AbCdEf_x1", FieldActor: "token:T1", FieldRequestID: "r-1",
		FieldTraceID: "", FieldData: `{"userTag":"AbCdEf","authLevel":"BASIC","mfaRequired":false}`}
	want, err := FromEntry("1-0", fields)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromEntry("1-0", map[string]string{FieldPacked: OutboxValue(fields)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("packed: %+v, fields: %+v", got, want)
	}
	if _, err := FromEntry("1-0", map[string]string{FieldPacked: "session.created\n1795735777019"}); err == nil {
		t.Fatal("a packed event missing its lines decoded")
	}
}
