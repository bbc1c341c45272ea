// Messages of a customer's deposit address page (/d/{id}, product §30), in the payer's page's four languages.
import type { Language } from "./messages.ts";

const en = {
  depTitle: "Deposit address",
  depHeading: "Your deposit address at {merchant}",
  depNotFound: "Deposit address not found",
  depIntro:
    "Send {currency} to this address whenever you like. Each transfer is credited to your account at {merchant} once the network confirms it.",
  depActive: "Active",
  depInactive: "Inactive",
  depInactiveText:
    "{merchant} has paused this address: a transfer to it is held until {merchant} decides what to do with it.",
  depAddress: "Your {currency} address, the same on every network below",
  depNetworks: "Networks",
  depOnNetwork: "On {network}",
  depQr: "QR code of this address on {network} for your wallet",
  depNoNetwork: "No network takes {currency} deposits now. Send nothing until {merchant} tells you it does.",
  depDeposits: "Deposits received",
  depLatest: "The latest {count}, newest first.",
  depNone: "No deposit yet. A transfer shows here once the network has it.",
  depNetwork: "Network",
  depTx: "Transaction",
  "dep.pending": "Confirming",
  "dep.completed": "Credited",
  "dep.aml_check": "Under review",
  "dep.blocked": "Blocked",
  "dep.held": "Held by the merchant",
  "dep.refunded": "Refunded",
  "dep.dust": "Below the minimum",
  "dep.reversed": "Undone by the network",
};

type Key = keyof typeof en;

const fr: Record<Key, string> = {
  depTitle: "Adresse de dépôt",
  depHeading: "Votre adresse de dépôt chez {merchant}",
  depNotFound: "Adresse de dépôt introuvable",
  depIntro:
    "Envoyez des {currency} à cette adresse quand vous le souhaitez. Chaque virement est crédité sur votre compte chez {merchant} dès que le réseau le confirme.",
  depActive: "Active",
  depInactive: "Inactive",
  depInactiveText:
    "{merchant} a suspendu cette adresse : un virement reçu est retenu jusqu’à ce que {merchant} décide de sa suite.",
  depAddress: "Votre adresse {currency}, la même sur chaque réseau ci-dessous",
  depNetworks: "Réseaux",
  depOnNetwork: "Sur {network}",
  depQr: "QR code de cette adresse sur {network} pour votre portefeuille",
  depNoNetwork:
    "Aucun réseau n’accepte de dépôt en {currency} pour l’instant. N’envoyez rien avant que {merchant} ne vous l’indique.",
  depDeposits: "Dépôts reçus",
  depLatest: "Les {count} derniers, du plus récent au plus ancien.",
  depNone: "Aucun dépôt pour l’instant. Un virement apparaît ici dès que le réseau l’a reçu.",
  depNetwork: "Réseau",
  depTx: "Transaction",
  "dep.pending": "En confirmation",
  "dep.completed": "Crédité",
  "dep.aml_check": "En cours de vérification",
  "dep.blocked": "Bloqué",
  "dep.held": "Retenu par le marchand",
  "dep.refunded": "Remboursé",
  "dep.dust": "Sous le minimum",
  "dep.reversed": "Annulé par le réseau",
};

const es: Record<Key, string> = {
  depTitle: "Dirección de depósito",
  depHeading: "Su dirección de depósito en {merchant}",
  depNotFound: "Dirección de depósito no encontrada",
  depIntro:
    "Envíe {currency} a esta dirección cuando quiera. Cada transferencia se abona en su cuenta de {merchant} cuando la red la confirma.",
  depActive: "Activa",
  depInactive: "Inactiva",
  depInactiveText:
    "{merchant} ha pausado esta dirección: una transferencia a ella queda retenida hasta que {merchant} decida qué hacer.",
  depAddress: "Su dirección de {currency}, la misma en cada red de abajo",
  depNetworks: "Redes",
  depOnNetwork: "En {network}",
  depQr: "Código QR de esta dirección en {network} para su monedero",
  depNoNetwork: "Ninguna red acepta depósitos de {currency} ahora. No envíe nada hasta que {merchant} se lo indique.",
  depDeposits: "Depósitos recibidos",
  depLatest: "Los {count} últimos, del más reciente al más antiguo.",
  depNone: "Aún no hay depósitos. Una transferencia aparece aquí en cuanto la red la tiene.",
  depNetwork: "Red",
  depTx: "Transacción",
  "dep.pending": "Confirmando",
  "dep.completed": "Abonado",
  "dep.aml_check": "En revisión",
  "dep.blocked": "Bloqueado",
  "dep.held": "Retenido por el comercio",
  "dep.refunded": "Reembolsado",
  "dep.dust": "Por debajo del mínimo",
  "dep.reversed": "Deshecho por la red",
};

const de: Record<Key, string> = {
  depTitle: "Einzahlungsadresse",
  depHeading: "Ihre Einzahlungsadresse bei {merchant}",
  depNotFound: "Einzahlungsadresse nicht gefunden",
  depIntro:
    "Senden Sie {currency} an diese Adresse, wann immer Sie möchten. Jede Überweisung wird Ihrem Konto bei {merchant} gutgeschrieben, sobald das Netzwerk sie bestätigt.",
  depActive: "Aktiv",
  depInactive: "Inaktiv",
  depInactiveText:
    "{merchant} hat diese Adresse pausiert: Eine Überweisung an sie wird zurückgehalten, bis {merchant} darüber entscheidet.",
  depAddress: "Ihre {currency}-Adresse, dieselbe in jedem Netzwerk unten",
  depNetworks: "Netzwerke",
  depOnNetwork: "Im Netzwerk {network}",
  depQr: "QR-Code dieser Adresse im Netzwerk {network} für Ihre Wallet",
  depNoNetwork:
    "Derzeit nimmt kein Netzwerk Einzahlungen in {currency} an. Senden Sie nichts, bis {merchant} es Ihnen mitteilt.",
  depDeposits: "Eingegangene Einzahlungen",
  depLatest: "Die letzten {count}, die neueste zuerst.",
  depNone: "Noch keine Einzahlung. Eine Überweisung erscheint hier, sobald das Netzwerk sie hat.",
  depNetwork: "Netzwerk",
  depTx: "Transaktion",
  "dep.pending": "Wird bestätigt",
  "dep.completed": "Gutgeschrieben",
  "dep.aml_check": "In Prüfung",
  "dep.blocked": "Gesperrt",
  "dep.held": "Vom Händler zurückgehalten",
  "dep.refunded": "Erstattet",
  "dep.dust": "Unter dem Mindestbetrag",
  "dep.reversed": "Vom Netzwerk rückgängig gemacht",
};

const CATALOGS: Readonly<Record<Language, Record<Key, string>>> = { en, fr, es, de };

export type DepositMessageKey = Key;

/** A message with its `{name}` placeholders filled (plain text; the caller escapes the result). */
export function depositMessage(lang: Language, key: Key, values: Record<string, string> = {}): string {
  return CATALOGS[lang][key].replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
