/**
 * Intel GPUs by PCI device id: the name the inventory gives them, their family (the gpu-family
 * tag), and whether they are integrated. The ids, names and families are Intel's, as its DRA
 * driver lists them (intel-resource-drivers-for-kubernetes, pkg/gpu/device/models.go). Pure.
 */
export interface IntelModel {
    name: string;
    family: string;
    integrated: boolean;
}

const discrete = (name: string, family: string): IntelModel => ({ name, family, integrated: false });
const integrated = (name: string): IntelModel => ({ name, family: "integrated", integrated: true });

const MODELS: Readonly<Record<string, IntelModel>> = {
    "0x56c0": discrete("Intel Data Center GPU Flex 170", "flex"),
    "0x56c1": discrete("Intel Data Center GPU Flex 140", "flex"),
    "0x0b69": discrete("Intel Data Center GPU Max 1550", "max"),
    "0x0bd0": discrete("Intel Data Center GPU Max 1550", "max"),
    "0x0bd5": discrete("Intel Data Center GPU Max 1550", "max"),
    "0x0bd6": discrete("Intel Data Center GPU Max 1450", "max"),
    "0x0bd9": discrete("Intel Data Center GPU Max 1100", "max"),
    "0x0bda": discrete("Intel Data Center GPU Max 1100", "max"),
    "0x0bdb": discrete("Intel Data Center GPU Max 1100", "max"),
    "0x56a0": discrete("Intel Arc A770", "arc-a"),
    "0x56a1": discrete("Intel Arc A750", "arc-a"),
    "0x56a2": discrete("Intel Arc A580", "arc-a"),
    "0x56a5": discrete("Intel Arc A380", "arc-a"),
    "0x56a6": discrete("Intel Arc A310", "arc-a"),
    "0x56b0": discrete("Intel Arc Pro A30M", "arc-a"),
    "0x56b1": discrete("Intel Arc Pro A40/A50", "arc-a"),
    "0x56b2": discrete("Intel Arc Pro A60M", "arc-a"),
    "0x56b3": discrete("Intel Arc Pro A60", "arc-a"),
    "0xe20b": discrete("Intel Arc B580", "arc-b"),
    "0xe20c": discrete("Intel Arc B570", "arc-b"),
    "0xe211": discrete("Intel Arc Pro B60", "arc-b"),
    "0xe212": discrete("Intel Arc Pro B50", "arc-b"),
    "0x4626": integrated("Intel Iris Xe Graphics (Alder Lake-P)"),
    "0xa7a0": integrated("Intel Iris Xe Graphics (Raptor Lake-P)"),
    "0x7d67": integrated("Intel Graphics (Arrow Lake-S)"),
};

/** The model of a PCI device id (0x56c0); undefined for an id this table does not know. */
export function intelModel(pciDeviceId: string): IntelModel | undefined {
    return MODELS[pciDeviceId.toLowerCase()];
}
