package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// badRequests is the catalogue of malformed and hostile requests: each must
// get a 4xx with the JSON error body, and change nothing. In paths and
// bodies, {org} {proj} {sensor} {inst} {bp} {user} {token} name the
// fixture's ids.
var badRequests = []struct {
	name, method, path, contentType, body string
	status                                int
}{
	// Readings: broken JSON and wrong shapes.
	{"BrokenJSON", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}`, 400},
	{"NotJSONAtAll", "POST", "/readings/{sensor}", "json", `datetime=2024`, 400},
	{"TrailingComma", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1},}]`, 400},
	{"SingleQuotes", "POST", "/readings/{sensor}", "json", `[{'datetime':'2024-05-01T12:00:00Z','inputs':{'1':1}}]`, 400},
	{"EmptyArray", "POST", "/readings/{sensor}", "json", `[]`, 400},
	{"EmptyBody", "POST", "/readings/{sensor}", "json", ``, 400},
	{"ObjectNotArray", "POST", "/readings/{sensor}", "json", `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}`, 400},
	{"DeepNesting", "POST", "/readings/{sensor}", "json", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), 400},
	{"DeepNestingInInputs", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}]`, 400},
	{"UnknownField", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1},"sensor":2}]`, 400},
	{"DuplicateKeys", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1},"inputs":{"1":2}}]`, 400},
	{"InputsArray", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":[1,2]}]`, 400},
	{"ValueBool", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":true}}]`, 400},
	{"ValueNaNString", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":"NaN"}}]`, 400},
	{"ValueInfinityString", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":"-Infinity"}}]`, 400},
	{"ValueNaNBare", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":NaN}}]`, 400},
	{"ValueHuge", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1e309}}]`, 400},
	{"ValueHexa", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":0x10}}]`, 400},
	{"InputIDFloat", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1.5":1}}]`, 400},
	{"InputIDOverflow", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"99999999999999999999":1}}]`, 400},
	{"InputIDSQL", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1; DROP TABLE readings":1}}]`, 400},
	{"InputIDUnicode", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"١":1}}]`, 400},
	{"InvalidUTF8", "POST", "/readings/{sensor}", "json", "[{\"datetime\":\"2024-05-01T12:00:00Z\",\"inputs\":{\"1\xff\":1}}]", 400},
	{"NotAnInputOfTheInstance", "POST", "/readings/{inst}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"987654321":1}}]`, 400},
	// Readings: bad datetimes.
	{"NoZone", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00","inputs":{"1":1}}]`, 400},
	{"SevenDigits", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00.1234567Z","inputs":{"1":1}}]`, 400},
	{"YearZero", "POST", "/readings/{sensor}", "json", `[{"datetime":"0000-01-01T00:00:00Z","inputs":{"1":1}}]`, 400},
	{"Hour24", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T24:00:00Z","inputs":{"1":1}}]`, 400},
	{"LeapSecond", "POST", "/readings/{sensor}", "json", `[{"datetime":"2016-12-31T23:59:60Z","inputs":{"1":1}}]`, 400},
	{"February30", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-02-30T00:00:00Z","inputs":{"1":1}}]`, 400},
	{"UnixSeconds", "POST", "/readings/{sensor}", "json", `[{"datetime":1714564800,"inputs":{"1":1}}]`, 400},
	{"DatetimeSQL", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01'); DROP TABLE readings; --","inputs":{"1":1}}]`, 400},
	// Readings: files.
	{"FileNoHeader", "POST", "/readings/{sensor}", "text/csv", "2024-05-01T12:00:00Z,1\n", 400},
	{"FileBinary", "POST", "/readings/{sensor}", "text/csv", "\x00\x01\x02\xff", 400},
	{"FileBadLine", "POST", "/readings/{sensor}", "text/csv", "datetime,1\n2024-05-01T12:00:00Z,1\n2024-05-01T12:10:00Z,x\n", 400},
	{"FileTOA5Cut", "POST", "/readings/{sensor}", "text/csv", "\"TOA5\",\"a\"\n\"TIMESTAMP\",\"1\"\n", 400},
	{"FileUnknownZone", "POST", "/readings/{sensor}?tz=Local", "text/csv", "datetime,1\n2024-05-01 12:00:00,1\n", 400},
	{"FileBadDst", "POST", "/readings/{sensor}?dst=both", "text/csv", "datetime,1\n2024-05-01 12:00:00,1\n", 400},
	{"FileXML", "POST", "/readings/{sensor}", "application/xml", "<readings/>", 415},
	// Readings: query parameters.
	{"QueryBadDatetime", "GET", "/readings/{sensor}?datetime__gte=2024-05-01", "", "", 400},
	{"QueryNoZone", "GET", "/readings/{sensor}?datetime__lt=2024-05-01T00:00:00", "", "", 400},
	{"QueryMillisTooLarge", "GET", "/readings/{sensor}?datetime__gte=9999999999999999", "", "", 400},
	{"QueryMillisTooLong", "GET", "/readings/{sensor}?datetime__gte=17145216000000000", "", "", 400},
	{"QueryMillisFraction", "GET", "/readings/{sensor}?datetime__gte=1714521600000.5", "", "", 400},
	{"ExportMillisTooSmall", "GET", "/readings/{sensor}/export?datetime__lt=-9999999999999999", "", "", 400},
	{"LongTooManySensors", "GET", "/api/v1/org/{org}/proj/{proj}/readings?sensors=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21", "", "", 400},
	{"LongBadCursor", "GET", "/api/v1/org/{org}/proj/{proj}/readings?cursor=12", "", "", 400},
	{"LongZeroCursor", "GET", "/api/v1/org/{org}/proj/{proj}/readings?cursor=0_0", "", "", 400},
	{"LongUnknownSensor", "GET", "/api/v1/org/{org}/proj/{proj}/readings?sensors=999999", "", "", 404},
	{"QuerySQL", "GET", "/readings/{sensor}?datetime__gte=2024-05-01T00:00:00Z'%20OR%201=1--", "", "", 400},
	{"QueryLimitZero", "GET", "/readings/{sensor}?limit=0", "", "", 400},
	{"QueryLimitHuge", "GET", "/readings/{sensor}?limit=99999999999999999999", "", "", 400},
	{"QueryLimitFloat", "GET", "/readings/{sensor}?limit=1.5", "", "", 400},
	{"QueryOffsetNegative", "GET", "/readings/{sensor}?offset=-1", "", "", 400},
	{"QueryOrderSQL", "GET", "/readings/{sensor}?order=asc;DELETE", "", "", 400},
	{"QueryOutputsMaybe", "GET", "/readings/{sensor}?outputs=perhaps", "", "", 400},
	{"DeleteWithoutBounds", "DELETE", "/readings/{sensor}", "", "", 400},
	{"DeleteBackwards", "DELETE", "/readings/{sensor}?datetime__gte=2025-01-01T00:00:00Z&datetime__lt=2024-01-01T00:00:00Z", "", "", 400},
	{"AggregatesBadInterval", "GET", "/readings/{sensor}/aggregates?interval=1y&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z", "", "", 400},
	{"AggregatesBadFn", "GET", "/readings/{sensor}/aggregates?interval=1h&fn=avg;drop&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z", "", "", 400},
	{"AggregatesSQLZone", "GET", "/readings/{sensor}/aggregates?interval=1h&tz=UTC';--&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z", "", "", 400},
	{"ExportBadFormat", "GET", "/readings/{sensor}/export?format=xlsx", "", "", 400},
	// Ids in paths.
	{"SensorIDZero", "GET", "/readings/0", "", "", 400},
	{"SensorIDNegative", "GET", "/readings/-5", "", "", 400},
	{"SensorIDFloat", "GET", "/readings/1.0", "", "", 400},
	{"SensorIDOverflow", "GET", "/readings/9223372036854775808", "", "", 400},
	{"SensorIDSQL", "GET", "/readings/1%20OR%201=1", "", "", 400},
	{"ProjectIDWord", "GET", "/api/v1/org/{org}/projects/first", "", "", 400},
	{"OrgIDNegative", "GET", "/api/v1/org/-1/projects", "", "", 404},
	{"BlueprintIDFloat", "GET", "/api/v1/org/{org}/blueprints/2.5", "", "", 400},
	{"UserIDZero", "DELETE", "/api/v1/org/{org}/members/0", "", "", 400},
	{"TokenIDWord", "DELETE", "/api/v1/me/tokens/all", "", "", 400},
	// Content types and sizes.
	{"TextPlain", "POST", "/readings/{sensor}", "text/plain", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`, 415},
	{"XML", "POST", "/readings/{sensor}", "application/xml", `<readings/>`, 415},
	{"NoContentType", "POST", "/api/v1/org/{org}/projects", "", `{"name":"x"}`, 415},
	{"Oversize", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}` + strings.Repeat(" ", 17<<20) + `]`, 413},
	// Projects, sensors, members, tokens: wrong types and unknown fields.
	{"ProjectNameNumber", "POST", "/api/v1/org/{org}/projects", "json", `{"name":42}`, 400},
	{"ProjectNameEmpty", "POST", "/api/v1/org/{org}/projects", "json", `{"name":""}`, 400},
	{"ProjectNameHuge", "POST", "/api/v1/org/{org}/projects", "json", `{"name":"` + strings.Repeat("☃", 201) + `"}`, 400},
	{"ProjectNameNUL", "POST", "/api/v1/org/{org}/projects", "json", `{"name":"a\u0000b"}`, 400},
	{"ProjectUnknownField", "POST", "/api/v1/org/{org}/projects", "json", `{"name":"x","org_id":2}`, 400},
	{"ProjectIDInBody", "PUT", "/api/v1/org/{org}/proj/{proj}", "json", `{"id":99}`, 400},
	{"ProjectStateWord", "PUT", "/api/v1/org/{org}/proj/{proj}", "json", `{"state":"deleted"}`, 400},
	{"ProjectActionSQL", "POST", "/api/v1/org/{org}/proj/{proj}", "json", `{"action":"archive'; --"}`, 400},
	{"SensorNameNull", "POST", "/api/v1/org/{org}/proj/{proj}/sensors", "json", `{"name":null}`, 400},
	{"SensorBlueprintOfNobody", "POST", "/api/v1/org/{org}/proj/{proj}/sensors", "json", `{"name":"x","blueprint_id":999999}`, 404},
	{"SensorBlueprintString", "POST", "/api/v1/org/{org}/proj/{proj}/sensors", "json", `{"name":"x","blueprint_id":"1"}`, 400},
	{"SensorConstantsNaN", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}", "json", `{"constants":{"G":"NaN"}}`, 400},
	{"MemberRoleGod", "POST", "/api/v1/org/{org}/members", "json", `{"email":"x@example.com","role":"god"}`, 400},
	{"MemberEmailSQL", "POST", "/api/v1/org/{org}/members", "json", `{"email":"' OR 1=1 --","role":"viewer"}`, 400},
	{"TokenExpiryNegative", "POST", "/api/v1/me/tokens", "json", `{"name":"x","expires_in_days":-1}`, 400},
	{"TokenExpiryFloat", "POST", "/api/v1/me/tokens", "json", `{"name":"x","expires_in_days":1.5}`, 400},
	{"TokenScopeWithoutOrg", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"project_id":1}}`, 400},
	{"TokenScopeUnknownField", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"org_id":{org},"sensors":[1]}}`, 400},
	{"TokenScopeSensorsEmpty", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"org_id":{org},"project_id":{proj},"sensor_ids":[]}}`, 400},
	{"TokenScopeSensorsRepeated", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"org_id":{org},"project_id":{proj},"sensor_ids":[{sensor},{sensor}]}}`, 400},
	{"TokenScopeDeviceWithoutProject", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"org_id":{org},"device":true}}`, 400},
	{"TokenScopeRoleGod", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"org_id":{org},"role":"god"}}`, 400},
	{"TokenScopeOtherOrgsProject", "POST", "/api/v1/me/tokens", "json", `{"name":"x","scope":{"org_id":{org},"project_id":999999}}`, 404},
	// Invitations.
	{"InvitationRoleGod", "POST", "/api/v1/org/{org}/invitations", "json", `{"email":"x@example.com","role":"god"}`, 400},
	{"InvitationExpiryTooLong", "POST", "/api/v1/org/{org}/invitations", "json", `{"email":"x@example.com","role":"viewer","expires_in_days":31}`, 400},
	{"InvitationEmailNotEmail", "POST", "/api/v1/org/{org}/invitations", "json", `{"email":"nobody","role":"viewer"}`, 400},
	{"InvitationIDWord", "DELETE", "/api/v1/org/{org}/invitations/all", "", "", 400},
	{"AcceptCodeShort", "POST", "/api/v1/invitations/accept", "json", `{"code":"inv_1"}`, 400},
	{"AcceptCodeSQL", "POST", "/api/v1/invitations/accept", "json", `{"code":"inv_' OR 1=1 --"}`, 400},
	{"AcceptCodeHuge", "POST", "/api/v1/invitations/accept", "json", `{"code":"inv_` + strings.Repeat("A", 100000) + `"}`, 400},
	{"AcceptUnknownCode", "POST", "/api/v1/invitations/accept", "json", `{"code":"inv_` + strings.Repeat("A", 43) + `"}`, 404},
	{"AcceptNameHuge", "POST", "/api/v1/invitations/accept", "json", `{"code":"inv_` + strings.Repeat("A", 43) + `","name":"` + strings.Repeat("n", 201) + `"}`, 400},
	// Blueprints and formulas.
	{"BlueprintBadFormula", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[{"key":"x","name":"X"}],"outputs":[{"key":"y","name":"Y","formula":"x +* 2"}]}`, 400},
	{"BlueprintCycle", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[],"outputs":[{"key":"a","name":"A","formula":"b"},{"key":"b","name":"B","formula":"a"}]}`, 400},
	{"BlueprintInjectionFormula", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[],"outputs":[{"key":"a","name":"A","formula":"exec('rm -rf /')"}]}`, 400},
	{"BlueprintKeySQL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[{"key":"x'; --","name":"X"}],"outputs":[]}`, 400},
	{"FormulaUnknownName", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/formulas", "json", `{"outputs":{"pressure":"G * nothing"}}`, 400},
	{"FormulaNotANumber", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/formulas", "json", `{"outputs":{"pressure":"'kPa'"}}`, 400},
	{"FormulaTooLong", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/formulas", "json", `{"outputs":{"pressure":"` + strings.Repeat("G+", 501) + `G"}}`, 400},
	{"CalibrationNoZone", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/calibrations", "json", `{"G":[{"from":"2024-06-01T00:00:00","value":1}]}`, 400},
	{"CalibrationHugeValue", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/calibrations", "json", `{"G":[{"from":"2024-06-01T00:00:00Z","value":1e400}]}`, 400},
	{"BaselinesObjectNotArray", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/baselines", "json", `{"freq":[{"from":"2024-06-01T00:00:00Z","value":1}]}`, 400},
	{"BaselineNoZone", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/baselines", "json", `[{"from":"2024-06-01T00:00:00","values":{"freq":1}}]`, 400},
	{"BaselineUnknownField", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/baselines", "json", `[{"from":"2024-06-01T00:00:00Z","value":1}]`, 400},
	{"BaselineHugeValue", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/baselines", "json", `[{"from":"2024-06-01T00:00:00Z","values":{"freq":1e400}}]`, 400},
	{"BaselineEmptyValues", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/baselines", "json", `[{"from":"2024-06-01T00:00:00Z","values":{}}]`, 400},
	{"LinksArray", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `[{"sensor_id":1,"key":"freq"}]`, 400},
	{"LinkNoSensor", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"key":"freq"}}`, 400},
	{"LinkNoKey", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":{inst}}}`, 400},
	{"LinkUnknownField", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":{inst},"key":"freq","max_age":60}}`, 400},
	{"LinkStalenessZero", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":{inst},"key":"freq","staleness":0}}`, 400},
	{"LinkStalenessOverAWeek", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":{inst},"key":"freq","staleness":604801}}`, 400},
	{"LinkStalenessString", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":{inst},"key":"freq","staleness":"1h"}}`, 400},
	{"LinkToItself", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":{inst},"key":"freq"}}`, 400},
	{"LinkOfAnUnknownInput", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"nope":{"sensor_id":{inst},"key":"freq"}}`, 400},
	{"LinkToAnUnknownSensor", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/links", "json", `{"temp":{"sensor_id":987654321,"key":"freq"}}`, 404},
	{"LinkOfAPlainSensor", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/links", "json", `{}`, 409},
	{"BaselineOfAnotherSensorNotFound", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/987654321/baselines", "json", `[]`, 404},
	// Control characters in names and texts: the spec's 400, never
	// PostgreSQL's encoding error.
	{"ProjectDescriptionNUL", "POST", "/api/v1/org/{org}/projects", "json", `{"name":"x","description":"a\u0000b"}`, 400},
	{"ProjectNameNewline", "POST", "/api/v1/org/{org}/projects", "json", `{"name":"a\nb"}`, 400},
	{"ProjectRenameNUL", "PUT", "/api/v1/org/{org}/proj/{proj}", "json", `{"name":"\u0000"}`, 400},
	{"SensorNameNUL", "POST", "/api/v1/org/{org}/proj/{proj}/sensors", "json", `{"name":"a\u0000"}`, 400},
	{"SensorDescriptionNUL", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}", "json", `{"description":"\u0000"}`, 400},
	{"TokenNameNUL", "POST", "/api/v1/me/tokens", "json", `{"name":"t\u0000"}`, 400},
	{"MemberNameNUL", "POST", "/api/v1/org/{org}/members", "json", `{"email":"new@example.com","name":"N\u0000","role":"viewer"}`, 400},
	{"MemberEmailNUL", "POST", "/api/v1/org/{org}/members", "json", `{"email":"n\u0000@example.com","role":"viewer"}`, 400},
	{"BlueprintNameNUL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b\u0000","inputs":[],"outputs":[]}`, 400},
	{"BlueprintDescriptionNUL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","description":"\u0000","inputs":[],"outputs":[]}`, 400},
	{"BlueprintInputNameNUL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[{"key":"x","name":"X\u0000"}],"outputs":[]}`, 400},
	{"BlueprintUnitNUL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[{"key":"x","name":"X","unit":"\u0000"}],"outputs":[]}`, 400},
	{"BlueprintKeyNUL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[{"key":"x\u0000","name":"X"}],"outputs":[]}`, 400},
	{"BlueprintFormulaNUL", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"b","inputs":[{"key":"x","name":"X"}],"outputs":[{"key":"y","name":"Y","formula":"x\u0000"}]}`, 400},
	{"BlueprintReplaceNameNUL", "PUT", "/api/v1/org/{org}/blueprints/{bp}", "json", `{"name":"\u0000","inputs":[],"outputs":[]}`, 400},
	{"FormulaNUL", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/formulas", "json", `{"outputs":{"pressure":"G\u0000"}}`, 400},
	{"FormulaKeyNUL", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/formulas", "json", `{"outputs":{"pressure\u0000":"G"}}`, 400},
	// Widths: inputs per reading, distinct inputs per sensor, values per
	// aggregates response.
	{"ReadingTooManyInputs", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{` + inputsJSON(1, 101) + `}}]`, 400},
	{"SensorTooManyInputIDs", "POST", "/readings/{sensor}", "json", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{` + inputsJSON(1, 60) + `}},{"datetime":"2024-05-01T12:01:00Z","inputs":{` + inputsJSON(61, 60) + `}}]`, 400},
	{"AggregatesTooManyValues", "GET", "/readings/{inst}/aggregates?interval=1m&fill=null&outputs=true&fn=avg,min,max,sum,count,first,last,median,range,rate&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-07T22:30:00Z", "", "", 400},
	// Alarms.
	{"AlarmRuleUnknownTarget", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"depth","level":"Alert","direction":"above","threshold":1}`, 400},
	{"AlarmRuleOnSensorWithoutBlueprint", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/alarm-rules", "json", `{"target":"freq","level":"Alert","direction":"above","threshold":1}`, 400},
	{"AlarmRuleLevelSQL", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert'; --","direction":"above","threshold":1}`, 400},
	{"AlarmRuleThresholdHuge", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert","direction":"above","threshold":1e999}`, 400},
	{"AlarmRuleThresholdNaN", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert","direction":"above","threshold":"NaN"}`, 400},
	{"AlarmRuleDeadbandNegative", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert","direction":"above","threshold":1,"deadband":-0.5}`, 400},
	{"AlarmRulePersistenceHuge", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert","direction":"above","threshold":1,"persistence":1001}`, 400},
	{"AlarmRuleDirectionWord", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert","direction":"over","threshold":1}`, 400},
	{"AlarmRuleUnknownField", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/alarm-rules", "json", `{"target":"digits","level":"Alert","direction":"above","threshold":1,"active":true}`, 400},
	{"AlarmLevelColourName", "POST", "/api/v1/org/{org}/proj/{proj}/alarm-levels", "json", `{"name":"Red","rank":9,"colour":"red"}`, 400},
	{"AlarmLevelRankZero", "POST", "/api/v1/org/{org}/proj/{proj}/alarm-levels", "json", `{"name":"Low","rank":0,"colour":"#000000"}`, 400},
	{"AlarmLevelEmptyUpdate", "PUT", "/api/v1/org/{org}/proj/{proj}/alarm-levels/1", "json", `{}`, 400},
	{"AlarmAcknowledgeUnknownField", "POST", "/api/v1/org/{org}/proj/{proj}/alarms/1/acknowledge", "json", `{"note":"x","by":3}`, 400},
	{"AlarmEventsBadCursor", "GET", "/api/v1/org/{org}/proj/{proj}/alarm-events?cursor=abc", "", "", 400},
	{"WebhookURLNotHTTP", "POST", "/api/v1/org/{org}/proj/{proj}/webhooks", "json", `{"url":"ftp://example.com/hook","secret":"0123456789abcdef"}`, 400},
	{"WebhookURLFile", "POST", "/api/v1/org/{org}/proj/{proj}/webhooks", "json", `{"url":"file:///etc/passwd","secret":"0123456789abcdef"}`, 400},
	{"WebhookURLCredentials", "POST", "/api/v1/org/{org}/proj/{proj}/webhooks", "json", `{"url":"https://u:p@example.com/","secret":"0123456789abcdef"}`, 400},
	{"WebhookSecretShort", "POST", "/api/v1/org/{org}/proj/{proj}/webhooks", "json", `{"url":"https://example.com/hook","secret":"short"}`, 400},
	{"OverdueTooShort", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/overdue", "json", `{"level":"Maintenance","after_seconds":5}`, 400},
	{"OverdueUnknownLevel", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/overdue", "json", `{"level":"Never","after_seconds":600}`, 400},
	{"AlarmEventsLevelWord", "GET", "/api/v1/org/{org}/proj/{proj}/alarm-events?level_id=alarm", "", "", 400},
	{"AlarmEventsOrderWord", "GET", "/api/v1/org/{org}/proj/{proj}/alarm-events?order=newest", "", "", 400},
	{"AlarmEventsDescCursorAsc", "GET", "/api/v1/org/{org}/proj/{proj}/alarm-events?order=asc&cursor=d5", "", "", 400},
	{"AlarmEventsDescCursorWord", "GET", "/api/v1/org/{org}/proj/{proj}/alarm-events?order=desc&cursor=dabc", "", "", 400},
	{"AlarmEventsBoundWord", "GET", "/api/v1/org/{org}/proj/{proj}/alarm-events?datetime__gte=yesterday", "", "", 400},
	// Status boards.
	{"StatusBadCursor", "GET", "/api/v1/org/{org}/proj/{proj}/status?cursor=abc", "", "", 400},
	{"StatusLimitZero", "GET", "/api/v1/org/{org}/proj/{proj}/status?limit=0", "", "", 400},
	{"StatusLimitHuge", "GET", "/api/v1/org/{org}/status?limit=1001", "", "", 400},
	{"StatusSensorWord", "GET", "/api/v1/org/{org}/proj/{proj}/status?sensor_id=PZ-01", "", "", 400},
	{"StatusSensorZero", "GET", "/api/v1/org/{org}/proj/{proj}/status?sensor_id=0", "", "", 400},
	{"StatusTooManySensors", "GET", "/api/v1/org/{org}/proj/{proj}/status?" + strings.Repeat("sensor_id=1&", 100) + "sensor_id=1", "", "", 400},
	{"StatusSensorOfOrgStatus", "GET", "/api/v1/org/{org}/status?sensor_id={sensor}", "", "", 400},
	{"StatusUnknownProject", "GET", "/api/v1/org/{org}/proj/999999/status", "", "", 404},
	// Output precision.
	{"BlueprintDecimalsNegative", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"P","inputs":[{"key":"f","name":"F"}],"outputs":[{"key":"d","name":"D","formula":"f","decimals":-1}]}`, 400},
	{"BlueprintDecimalsTooMany", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"P","inputs":[{"key":"f","name":"F"}],"outputs":[{"key":"d","name":"D","formula":"f","decimals":13}]}`, 400},
	{"BlueprintDecimalsFraction", "POST", "/api/v1/org/{org}/blueprints", "json", `{"name":"P","inputs":[{"key":"f","name":"F"}],"outputs":[{"key":"d","name":"D","formula":"f","decimals":1.5}]}`, 400},
	// Import profiles.
	{"ProfileOutputNotInput", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"columns":{"Freq_Avg":"pressure"}}`, 400},
	{"ProfileTwoColumnsOneInput", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"columns":{"a":"freq","b":"freq"}}`, 400},
	{"ProfileEmptyColumnName", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"columns":{"":"freq"}}`, 400},
	{"ProfileLongColumnName", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"columns":{"` + strings.Repeat("c", 201) + `":"freq"}}`, 400},
	{"ProfileColumnsArray", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"columns":["freq"]}`, 400},
	{"ProfileBadZone", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"tz":"Mars/Olympus_Mons"}`, 400},
	{"ProfileLocalZone", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"tz":"Local"}`, 400},
	{"ProfileDstWord", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"dst":"summer"}`, 400},
	{"ProfileUnknownField", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/import-profile", "json", `{"zone":"UTC"}`, 400},
	{"ProfileKeyWithoutBlueprint", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/import-profile", "json", `{"columns":{"ch1":"freq"}}`, 400},
	{"ProfileLeadingZeroID", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/import-profile", "json", `{"columns":{"ch1":"05"}}`, 400},
	// Quality: flags, checks, as_of and the audit trail.
	{"FlagUnknownKind", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"bad","from":"2024-05-01T12:00:00Z","reason":"x"}`, 400},
	{"FlagNoReason", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00Z"}`, 400},
	{"FlagEmptyReason", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00Z","reason":""}`, 400},
	{"FlagNoZone", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00","reason":"x"}`, 400},
	{"FlagToBeforeFrom", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00Z","to":"2024-05-01T11:00:00Z","reason":"x"}`, 400},
	{"FlagUnknownInput", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00Z","input":"nope","reason":"x"}`, 400},
	{"FlagInputNotAnID", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{sensor}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00Z","input":"freq","reason":"x"}`, 400},
	{"FlagUnknownField", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags", "json", `{"flag":"rejected","from":"2024-05-01T12:00:00Z","reason":"x","by":1}`, 400},
	{"FlagClearNoReason", "POST", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags/clear", "json", `{"from":"2024-05-01T12:00:00Z"}`, 400},
	{"FlagsBadCursor", "GET", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/flags?cursor=x", "", "", 400},
	{"ChecksUnknownKind", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"freq","kind":"magic"}]}`, 400},
	{"ChecksUnknownTarget", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"nope","kind":"range","max":1}]}`, 400},
	{"ChecksRangeWithoutBounds", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"freq","kind":"range"}]}`, 400},
	{"ChecksRangeInverted", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"freq","kind":"range","min":5,"max":1}]}`, 400},
	{"ChecksSpikeWithoutBound", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"freq","kind":"spike"}]}`, 400},
	{"ChecksNegativeBound", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"freq","kind":"rate","bound":-1}]}`, 400},
	{"ChecksStuckCountOne", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[{"target":"freq","kind":"stuck","count":1}]}`, 400},
	{"ChecksNotAList", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `[{"target":"freq","kind":"stuck","count":3}]`, 400},
	{"ChecksTooMany", "PUT", "/api/v1/org/{org}/proj/{proj}/sensors/{inst}/checks", "json", `{"checks":[` + strings.Repeat(`{"target":"freq","kind":"stuck","count":3},`, 50) + `{"target":"freq","kind":"stuck","count":3}]}`, 400},
	{"AsOfNotAnInstant", "GET", "/readings/{inst}?as_of=yesterday", "", "", 400},
	{"AsOfOnAggregates", "GET", "/readings/{inst}/aggregates?interval=1h&as_of=2024-13-01T00:00:00Z&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z", "", "", 400},
	{"FlagsNotABool", "GET", "/readings/{inst}?flags=maybe", "", "", 400},
	{"AuditUnknownKind", "GET", "/api/v1/org/{org}/proj/{proj}/audit?kind=everything", "", "", 400},
	{"AuditUnknownSensor", "GET", "/api/v1/org/{org}/proj/{proj}/audit?sensor_id=987654321", "", "", 404},
	{"AuditBadCursor", "GET", "/api/v1/org/{org}/audit?cursor=-1", "", "", 400},
	{"FileColumnsNoColon", "POST", "/readings/{inst}?columns=Freq_Avg", "text/csv", "datetime,Freq_Avg\n2024-05-01T00:00:00Z,1\n", 400},
	{"FileColumnsUnknownInput", "POST", "/readings/{inst}?columns=Freq_Avg:frequency", "text/csv", "datetime,Freq_Avg\n2024-05-01T00:00:00Z,1\n", 400},
	{"FileColumnsEmpty", "POST", "/readings/{inst}?columns=", "text/csv", "datetime,Freq_Avg\n2024-05-01T00:00:00Z,1\n", 400},
}

// postgresWords are in PostgreSQL's error messages, never in ours: they
// name tables, constraints and encodings.
var postgresWords = []string{"violates", "constraint", "relation", "invalid byte sequence", "UTF8", "SQLSTATE", "out of range: overflow"}

// inputsJSON is n inputs from id first on, "first":1,… for a JSON object.
func inputsJSON(first, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"%d":1`, first+i)
	}
	return strings.Join(parts, ",")
}

// hostileStrings are valid but hostile: they must be stored and returned
// exactly as sent, proving that SQL metacharacters reach the database as
// data, never as SQL.
var hostileStrings = []string{
	`'; DROP TABLE readings; --`,
	`" OR "1"="1`,
	`\'; SELECT pg_sleep(10); --`,
	`$1 $$ $tag$ :: ; /* */`,
	`Ünïcödé ☃ 日本語 🌡️ ‮right-to-left`,
	`<script>alert(1)</script>`,
	`%00%27 \u0000 escaped`,
}

func TestBadInputCatalogue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	if len(badRequests) < 60 {
		t.Fatalf("the catalogue has %d requests; it should have at least 60", len(badRequests))
	}
	tokenID := int64(0)
	if tokens, _, err := e.db.ListTokens(context.Background(), tn.userIDs[store.Owner], 0, 100); err == nil {
		tokenID = tokens[0].ID
	}
	replacer := strings.NewReplacer(
		"{org}", fmt.Sprint(tn.orgID), "{proj}", fmt.Sprint(tn.projectID), "{sensor}", fmt.Sprint(tn.sensorID),
		"{inst}", fmt.Sprint(tn.instanceID), "{bp}", fmt.Sprint(tn.blueprintID), "{user}", fmt.Sprint(tn.userIDs[store.Viewer]),
		"{token}", fmt.Sprint(tokenID))
	before := e.digest(t)
	for _, tc := range badRequests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if strings.HasPrefix(path, "/readings/") {
				path = fmt.Sprintf("/api/v1/org/{org}/proj/{proj}%s", path)
			}
			contentType := tc.contentType
			if contentType == "json" {
				contentType = "application/json"
			}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(replacer.Replace(tc.body))
			}
			res, got := e.do(tn.tokens[store.Owner], tc.method, replacer.Replace(path), contentType, body)
			if res.StatusCode != tc.status {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, path, res.StatusCode, truncate(got, 300), tc.status)
			}
			var errBody client.Error
			if err := json.Unmarshal(got, &errBody); err != nil || errBody.Code == "" || errBody.Message == "" {
				t.Errorf("the body %s is not the JSON error", truncate(got, 300))
			}
			if strings.Contains(string(got), "goroutine") || strings.Contains(string(got), ".go:") {
				t.Errorf("the body shows a stack trace: %s", truncate(got, 300))
			}
			for _, pg := range postgresWords {
				if strings.Contains(errBody.Message, pg) {
					t.Errorf("the message %q shows PostgreSQL's %q", errBody.Message, pg)
				}
			}
		})
	}
	if after := e.digest(t); after != before {
		t.Error("the catalogue's requests changed the database")
	}
}

func TestHostileStringsAreData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	owner := e.owner(tn)
	for i, s := range hostileStrings {
		created, err := owner.CreateProjectWithResponse(ctx, tn.orgID, client.ProjectCreate{Name: s, Description: &s})
		if err != nil || created.StatusCode() != 201 {
			t.Fatalf("project %q: %v %s", s, err, created.Body)
		}
		got, _ := owner.GetProjectWithResponse(ctx, tn.orgID, created.JSON201.Id)
		if got.JSON200.Name != s || got.JSON200.Description != s {
			t.Errorf("project %d came back as %q / %q, want %q", i, got.JSON200.Name, got.JSON200.Description, s)
		}
		sensor, err := owner.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: s})
		if err != nil || sensor.StatusCode() != 201 || sensor.JSON201.Name != s {
			t.Errorf("sensor %q: %v %s", s, err, sensor.Body)
		}
		token, err := owner.CreateTokenWithResponse(ctx, client.TokenCreate{Name: s})
		if err != nil || token.StatusCode() != 201 || token.JSON201.Name != s {
			t.Errorf("token %q: %v %s", s, err, token.Body)
		}
	}
	var tables int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename IN ('readings', 'projects', 'sensors', 'api_tokens')`).Scan(&tables); err != nil || tables != 4 {
		t.Errorf("%d of the 4 tables left (%v)", tables, err)
	}
}

// digest is a hash of every row the service keeps, to tell whether a
// request changed anything at all.
func (e *env) digest(t *testing.T) string {
	t.Helper()
	var dump string
	err := e.pool.QueryRow(context.Background(), `
SELECT concat_ws('|',
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM organizations t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM users t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM memberships t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM api_tokens t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM projects t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM sensors t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM blueprints t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM sensor_inputs t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM readings t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM alarm_levels t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM alarm_rules t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM alarms t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM alarm_events t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM alarm_overdue t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM import_profiles t),
  (SELECT string_agg(t::text, ';' ORDER BY t::text) FROM webhooks t))`).Scan(&dump)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(dump)))
}

// A control character in a name is a 400 that names the field and says,
// in words, what is wrong.
func TestControlCharactersNamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/projects", tn.orgID), "application/json",
		strings.NewReader(`{"name":"a\u0000b"}`))
	got := wantError(t, res.StatusCode, body, 400, "invalid")
	if want := `body field "/name": must not hold control characters`; !strings.HasPrefix(got.Message, want) {
		t.Errorf("message %q, want it to start %q", got.Message, want)
	}
}
