// Package hashgate is the module root. It holds no code, only the checks that concern the
// whole repository: the import rule between the layers (arch_test.go) and the compose file
// (compose_test.go). The gateway is cmd/gateway; its packages are under internal/.
package hashgate
