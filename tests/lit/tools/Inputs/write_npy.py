#!/usr/bin/env python3
"""write_npy.py OUT DESCR SHAPE [VALUE...] - a NumPy .npy file, without NumPy.

DESCR is a little-endian NumPy type ("f4", "f8", "i4", "i8"); SHAPE the
dimensions separated by commas ("3,2"; "" for a scalar). The values, in
C order, fill the shape; with fewer values, the value i is the element
number i % len(values) (none: 0, 1, 2, ...). For lit tests of agc-model.
"""
import struct
import sys


def main():
    out, descr, shape_text = sys.argv[1:4]
    values = [float(v) for v in sys.argv[4:]]
    shape = [int(d) for d in shape_text.split(",") if d]
    count = 1
    for d in shape:
        count *= d
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    fmt = {"f4": "f", "f8": "d", "i4": "i", "i8": "q"}[descr]
    data = b"".join(
        struct.pack("<" + fmt, (values[i % len(values)] if values else i)
                    if fmt in "fd" else int(values[i % len(values)] if values else i))
        for i in range(count))
    with open(out, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(data)


if __name__ == "__main__":
    main()
