import ContinualCore

/// `"split_digits"`: the 8×8 digits cut into experiences of `classes_per_experience` classes
/// (default 5 experiences of 2: {0,1}, {2,3}, …), in the three settings of van de Ven et al.
/// (2022):
/// - `class` (class-incremental): one 10-way head, labels are the digits; the model must tell
///   all classes seen so far apart without being told the task.
/// - `domain` (domain-incremental): labels are the position within the experience's pair
///   (0 = first, 1 = second digit), one shared head.
/// - `task` (task-incremental): the same labels, but each experience has its own output head
///   (set `"model": {"multi_head": true}`; the experience index selects the head).
public struct SplitDigitsScenario: ScenarioOptions {
    public static let typeName = "split_digits"
    public static let summary = "8x8 digits in experiences of 2 classes: task-, domain- or class-incremental"

    public enum Setting: String, Codable, Sendable, CaseIterable { case task, domain, `class` }

    public var path = DigitsData.defaultPath
    public var setting: Setting = .class
    public var classOrder: [Int] = Array(0..<10)
    public var classesPerExperience = 2

    public init(setting: Setting = .class) { self.setting = setting }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, setting, classOrder = "class_order", classesPerExperience = "classes_per_experience"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.strictContainer(keyedBy: CodingKeys.self, alsoAllowed: ["type"])
        path = try c.decode(.path, default: DigitsData.defaultPath)
        setting = try c.decodeChoice(.setting, default: .class)
        classOrder = try c.decode(.classOrder, default: Array(0..<10))
        classesPerExperience = try c.decode(.classesPerExperience, default: 2)
        try c.require(classOrder.sorted() == Array(0..<10), .classOrder, "must be a permutation of 0...9, got \(classOrder)")
        try c.require([1, 2, 5, 10].contains(classesPerExperience) && (classesPerExperience > 1 || setting == .class),
                      .classesPerExperience, "must divide 10 (2 or 5; 1 only for the class setting), got \(classesPerExperience)")
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(setting, forKey: .setting)
        try c.encode(classOrder, forKey: .classOrder)
        try c.encode(classesPerExperience, forKey: .classesPerExperience)
    }

    /// The "task" setting evaluates each experience with its own head (task identity given).
    public var providesTaskIdentity: Bool { setting == .task }

    public func makeStream(seed: UInt64) throws -> ExperienceStream {
        let data = try DigitsData.load(path)
        let k = classesPerExperience
        var experiences: [Experience] = []
        for e in 0..<(10 / k) {
            let group = Array(classOrder[(e * k)..<((e + 1) * k)]).map { Int32($0) }
            func relabel(_ s: Samples) -> Samples {
                var sub = s.subset(DigitsData.indices(of: Set(group), in: s))
                if setting != .class { sub.labels = sub.labels.map { Int32(group.firstIndex(of: $0)!) } }
                return sub
            }
            let name = "digits_" + group.map(String.init).joined(separator: "_")
            experiences.append(Experience(
                index: e, name: name, train: relabel(data.train), test: relabel(data.test),
                metadata: ["classes": group.map(String.init).joined(separator: ","), "task_id": "\(e)",
                           "setting": setting.rawValue, "drift": e == 0 ? "none" : "sudden", "drift_kind": "real"]))
        }
        let head: OutputHead = setting == .class ? .multiclass(classes: 10) : (k == 2 ? .binary : .multiclass(classes: k))
        var metadata = ["source": path, "setting": setting.rawValue, "benchmark": "split digits (van de Ven et al. 2022 style)"]
        if setting == .task { metadata["requires"] = "model.multi_head = true (one head per experience)" }
        return ExperienceStream(name: Self.typeName, featureNames: data.featureNames, head: head,
                                experiences: experiences, metadata: metadata)
    }
}
