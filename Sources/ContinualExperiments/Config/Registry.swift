import ContinualCore
import ContinualScenarios
import ContinualStrategies

/// Every strategy plugin and scenario that experiment files can name by `"type"`.
///
/// Adding a method: write its file (plugin + `PluginOptions`) in `ContinualStrategies`, then add
/// its options type to `strategies` here. Nothing else changes.
public enum Registry {
    public static let strategies: [any PluginOptions.Type] = [
        Naive.Options.self,
        Joint.Options.self,
        EWC.Options.self,
        SynapticIntelligence.Options.self,
        Replay.Options.self,
        QuantizationAware.Options.self,
        Adapters.Options.self,
        LoRA.Options.self,
        LastLayer.Options.self,
        BitFit.Options.self,
        LearningWithoutForgetting.Options.self,
        L2Anchoring.Options.self,
        MemoryAwareSynapses.Options.self,
        GEM.Options.self,
        AGEM.Options.self,
        DEROptions.self,
        DERPlusPlusOptions.self,
        ERACE.Options.self,
        GDumb.Options.self,
        ICaRL.Options.self,
        HAT.Options.self,
        StreamingLDA.Options.self,
        PackNet.Options.self,
        ProgressiveNetwork.Options.self,
        GenerativeReplay.Options.self,
        Pruning.Options.self,
        EarlyExit.Options.self,
        LowRankFactorization.Options.self,
        Distillation.Options.self,
        LossFilter.Options.self,
        TrimmedLoss.Options.self,
        RWalk.Options.self,
        MaximallyInterferedRetrieval.Options.self,
        ContextDependentGating.Options.self,
        ERAML.Options.self,
        SeparateNetworks.Options.self,
        CLSER.Options.self,
        GSSGreedy.Options.self,
        BiC.Options.self,
        XDER.Options.self,
        SCR.Options.self,
        BIR.Options.self,
    ]

    public static let scenarios: [any ScenarioOptions.Type] = [
        HabitDriftScenario.self,
        NotificationEngagementScenario.self,
        AppUsageScenario.self,
        HealthBaselineScenario.self,
        DatasetScenario.self,
        SplitDigitsScenario.self,
        PermutedDigitsScenario.self,
        HabitEventsScenario.self,
    ]

    public static func strategy(named name: String) -> (any PluginOptions.Type)? {
        strategies.first { $0.typeName == name }
    }

    public static func scenario(named name: String) -> (any ScenarioOptions.Type)? {
        scenarios.first { $0.typeName == name }
    }
}
