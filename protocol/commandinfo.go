package protocol

// Read-only views of commandTable, for generated documentation (the JSON
// Schema of client messages in protocol/schema).

// Commands lists every device command in table order.
func Commands() []CommandKind {
	out := make([]CommandKind, 0, len(commandTable)-1)
	for k := CmdNone + 1; int(k) < len(commandTable); k++ {
		out = append(out, k)
	}
	return out
}

// DeviceType is the device type the command is for.
func (k CommandKind) DeviceType() DeviceType {
	if int(k) >= len(commandTable) {
		return 0
	}
	return commandTable[k].dt
}

// Fields names the fields of a control command's body: the documented one
// and an alternative spelling clients send ("" when there is none). Probes
// have none.
func (k CommandKind) Fields() (documented, alternative string) {
	if int(k) >= len(commandTable) {
		return "", ""
	}
	return commandTable[k].fields[0], commandTable[k].fields[1]
}

// Example is an example body of the command.
func (k CommandKind) Example() string {
	if int(k) >= len(commandTable) {
		return ""
	}
	return commandTable[k].example
}
