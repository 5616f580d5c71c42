// Package vm boots a Linux VM with qemu and runs a shell script in it as
// root, for what this machine's kernel cannot do: netem, above all
// (docs/experiments.md, "netem in a VM"). huddle lab --vm runs its lab
// in it, and the tests their netem experiments.
//
// The guest is Debian's kernel (linux-image-amd64: FindKernel) booted from
// an initramfs built here from this machine's own files: busybox
// (busybox-static), iproute2's ip and tc with their libraries, the kernel's
// modules for netem, veth, bridge and ifb with their dependencies, an init
// script, and Options.Files (the huddle binary under test). It has no
// network card: nothing it sends leaves it. The init mounts /proc, /sys,
// /dev, /run and /tmp, loads the modules, brings lo up, runs the script in
// /out, and powers off. The first serial port is the console (the kernel's
// and init's messages, and the script's output while it runs: Options.Logf,
// and the script's lines alone: Options.Stream);
// the second carries the results back: the script's output, a tar.gz of
// what it left in /out, and its exit status, in base64 between marker lines.
//
//	res, err := vm.Run(ctx, vm.Options{
//		Script: "tc qdisc add dev lo root netem delay 10ms && ping -c 3 127.0.0.1 > ping.txt",
//		OutDir: dir,
//	})
//	// res.Status, res.Output, dir/ping.txt
//
// qemu emulates the CPU in software (tcg) unless Options.Accel or
// $HUDDLE_VM_ACCEL says kvm: slowly, while the guest's clocks keep real
// time, so that programs in it see their peers late. Available says what
// is missing, naming Debian's package.
package vm
