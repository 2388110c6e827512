import ContinualHDF5
import Testing

@Test func attributesRoundTripOnGroupsAndDatasets() throws {
    let json = #"{"strategy": "ewc", "λ": 0.4, "note": "ünïcödé ✓"}"#
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let group = try file.root.createGroup("run")
        let dataset = try group.write([1.0, 2.0], shape: [2], name: "x")
        for attributes in [group.attributes, dataset.attributes, file.root.attributes] {
            try attributes.set("config", json)
            try attributes.set("lr", 0.01)
            try attributes.set("seed", Int64(7))
            try attributes.set("curve", [0.5, 0.25])
            try attributes.set("steps", [1, 2, 3] as [Int64])
            try attributes.set("none", [Double]())
            try attributes.set("tags", ["a", "β"])
        }
        try file.close()
        let reopened = try HDF5File.open(path: path)
        let group2 = try reopened.root.openGroup("run")
        for attributes in [group2.attributes, try group2.openDataset("x").attributes, reopened.root.attributes] {
            #expect(try attributes.names() == ["config", "curve", "lr", "none", "seed", "steps", "tags"])
            #expect(try attributes.string("config") == json)
            #expect(try attributes.scalar("lr", as: Double.self) == 0.01)
            #expect(try attributes.scalar("seed", as: Int64.self) == 7)
            #expect(try attributes.scalar("seed", as: Double.self) == 7)
            #expect(try attributes.array("curve", as: Double.self) == [0.5, 0.25])
            #expect(try attributes.array("steps", as: Int64.self) == [1, 2, 3])
            #expect(try attributes.array("none", as: Double.self) == [])
            #expect(try attributes.strings("tags") == ["a", "β"])
            #expect(try attributes.string("missing") == nil)
            #expect(try attributes.scalar("missing", as: Double.self) == nil)
        }
    }
}

@Test func attributesAreOverwrittenEvenWithAnotherType() throws {
    try withTemporaryFile { path in
        let attributes = try HDF5File.create(path: path).root.attributes
        try attributes.set("value", "first")
        try attributes.set("value", "second, and longer than the first")
        #expect(try attributes.string("value") == "second, and longer than the first")
        try attributes.set("value", 3.5)
        #expect(try attributes.scalar("value", as: Double.self) == 3.5)
        #expect(try attributes.names() == ["value"])
        try attributes.delete("value")
        #expect(!attributes.contains("value"))
    }
}

@Test func largeStringAttributesWork() throws {
    let big = String(repeating: "{\"k\": 1}", count: 20_000)  // 160 kB, beyond the 64 kB header limit
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        try file.root.attributes.set("config", big)
        try file.close()
        #expect(try HDF5File.open(path: path).root.attributes.string("config") == big)
    }
}

@Test func attributeTypeMismatchThrowsClearly() throws {
    try withTemporaryFile { path in
        let file = try HDF5File.create(path: path)
        let group = try file.root.createGroup("run")
        try group.attributes.set("name", "ewc")
        try group.attributes.set("curve", [1.0, 2.0])
        let asNumber = #expect(throws: HDF5Error.self) { try group.attributes.scalar("name", as: Double.self) }
        #expect(asNumber?.kind == .typeMismatch)
        #expect(asNumber?.message == "cannot read attribute 'name' of group 'run' in \(path): it holds strings, not Double")
        let asString = #expect(throws: HDF5Error.self) { try group.attributes.string("curve") }
        #expect(asString?.message.contains("floating-point numbers, not String") == true)
        let asScalar = #expect(throws: HDF5Error.self) { try group.attributes.scalar("curve", as: Double.self) }
        #expect(asScalar?.message.contains("holds 2 values, not a single Double") == true)
    }
}
