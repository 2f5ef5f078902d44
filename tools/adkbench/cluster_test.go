package main

import (
	"testing"
	"time"
)

// TestInfoCPU reads a server's CPU time as the sum of used_cpu_sys and
// used_cpu_user, and refuses a reply that lacks either.
func TestInfoCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500000\r\nused_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\nused_cpu_sys_main_thread:1.000000\r\nused_cpu_user_main_thread:0.400000\r\n"
	got, err := infoCPU(info)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1750 * time.Millisecond; got != want {
		t.Errorf("infoCPU = %v, want %v", got, want)
	}
	if _, err := infoCPU("# CPU\r\nused_cpu_sys:1.0\r\n"); err == nil {
		t.Error("infoCPU accepted a reply without used_cpu_user")
	}
	if _, err := infoCPU("used_cpu_sys:x\r\nused_cpu_user:1\r\n"); err == nil {
		t.Error("infoCPU accepted a value that is not a number")
	}
}

// TestClusterSlots pins the slot arithmetic the 3-namespace reference
// relies on: Redis's CRC16 (CLUSTER KEYSLOT foo is 12182), a namespace
// whose queue tag falls in the asked master's range, and the spread of
// the load's 50 tenants over three shards by redisstore's FNV-1a.
func TestClusterSlots(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	if got := crc16("foo") % 16384; got != 12182 {
		t.Errorf("slot of foo = %d, want 12182", got)
	}
	for i := range 3 {
		ns := namespaceOn("adkbench_1_1_", i, 3)
		if s := int(crc16(ns+":queue") % 16384); s < i*16384/3 || s >= (i+1)*16384/3 {
			t.Errorf("namespaceOn(%d) = %s in slot %d, outside master %d's range", i, ns, s, i)
		}
	}
	var counts [3]int
	for k := range clusterBusy {
		counts[fnvShard(tenantName(k), 3)]++
	}
	if counts != [3]int{16, 17, 17} {
		t.Errorf("the %d tenants fall %v over three shards, want [16 17 17]", clusterBusy, counts)
	}
}
