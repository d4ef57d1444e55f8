// Names for the generated schema types used across the app.
import type { components } from "../client/schema";

type Schemas = components["schemas"];
export type Project = Schemas["ProjectOut"];
export type Model = Schemas["ModelOut"];
export type Dataset = Schemas["DatasetOut"];
export type Job = Schemas["JobOut"];
export type Sample = Schemas["SampleDivergenceOut"];
export type FidelityReport = Schemas["FidelityReportOut"];
export type FidelityRun = Schemas["FidelityRunOut"];
export type LayerProfile = Schemas["LayerProfileOut"];
export type LayerFidelity = Schemas["LayerFidelityOut"];
export type LayerStats = Schemas["LayerStatsOut"];
export type JobChunk = Schemas["JobChunkOut"];
export type SensitivityReport = Schemas["SensitivityReportOut"];
export type SensitivityLayer = Schemas["SensitivityLayerOut"];
export type SensitivityConfig = Schemas["SensitivityConfigOut"];
export type SensitivityMatrix = Schemas["SensitivityMatrix"];
export type ChannelImportance = Schemas["ChannelImportanceOut"];
export type MixedPrecisionPlan = Schemas["MixedPrecisionPlanOut"];
export type SensitivityProfile = Schemas["SensitivityProfileOut"];
export type SensitivityComparison = Schemas["SensitivityComparisonOut"];
export type SweepPoint = Schemas["SweepPointOut"];
export type FrontierOut = Schemas["FrontierOut"];
export type FrontierPoint = Schemas["FrontierPointOut"];
