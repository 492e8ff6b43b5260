//! The agent card and everything in it: interfaces, provider, capabilities, extensions, skills,
//! signatures, security schemes, OAuth flows and security requirements.
//!
//! The card types' `extra` maps (JSON fields the a2a types do not name) have no proto field and
//! are left out; on the way back they are empty.

use accord_types::a2a;
use serde_json::Map;

use super::{
    ConvertError, convert, convert_list, convert_map, convert_opt, convert_required, non_empty, or_empty,
    struct_from_pb, struct_to_pb, true_or_none,
};
use crate::pb;

impl TryFrom<a2a::AgentInterface> for pb::AgentInterface {
    type Error = ConvertError;

    fn try_from(interface: a2a::AgentInterface) -> Result<Self, ConvertError> {
        Ok(Self {
            url: interface.url,
            protocol_binding: interface.protocol_binding,
            tenant: or_empty(interface.tenant),
            protocol_version: interface.protocol_version,
        })
    }
}

impl TryFrom<pb::AgentInterface> for a2a::AgentInterface {
    type Error = ConvertError;

    fn try_from(interface: pb::AgentInterface) -> Result<Self, ConvertError> {
        Ok(Self {
            url: interface.url,
            protocol_binding: interface.protocol_binding,
            tenant: non_empty(interface.tenant),
            protocol_version: interface.protocol_version,
            extra: Map::new(),
        })
    }
}

impl TryFrom<a2a::AgentProvider> for pb::AgentProvider {
    type Error = ConvertError;

    fn try_from(provider: a2a::AgentProvider) -> Result<Self, ConvertError> {
        Ok(Self { url: provider.url, organization: provider.organization })
    }
}

impl TryFrom<pb::AgentProvider> for a2a::AgentProvider {
    type Error = ConvertError;

    fn try_from(provider: pb::AgentProvider) -> Result<Self, ConvertError> {
        Ok(Self { url: provider.url, organization: provider.organization })
    }
}

impl TryFrom<a2a::AgentExtension> for pb::AgentExtension {
    type Error = ConvertError;

    fn try_from(extension: a2a::AgentExtension) -> Result<Self, ConvertError> {
        Ok(Self {
            uri: or_empty(extension.uri),
            description: or_empty(extension.description),
            required: extension.required.unwrap_or(false),
            params: struct_to_pb(extension.params, "params")?,
        })
    }
}

impl TryFrom<pb::AgentExtension> for a2a::AgentExtension {
    type Error = ConvertError;

    fn try_from(extension: pb::AgentExtension) -> Result<Self, ConvertError> {
        Ok(Self {
            uri: non_empty(extension.uri),
            description: non_empty(extension.description),
            required: true_or_none(extension.required),
            params: struct_from_pb(extension.params, "params")?,
        })
    }
}

impl TryFrom<a2a::AgentCapabilities> for pb::AgentCapabilities {
    type Error = ConvertError;

    fn try_from(capabilities: a2a::AgentCapabilities) -> Result<Self, ConvertError> {
        Ok(Self {
            streaming: capabilities.streaming,
            push_notifications: capabilities.push_notifications,
            extensions: convert_list(capabilities.extensions, "extensions")?,
            extended_agent_card: capabilities.extended_agent_card,
        })
    }
}

impl TryFrom<pb::AgentCapabilities> for a2a::AgentCapabilities {
    type Error = ConvertError;

    fn try_from(capabilities: pb::AgentCapabilities) -> Result<Self, ConvertError> {
        Ok(Self {
            streaming: capabilities.streaming,
            push_notifications: capabilities.push_notifications,
            extensions: convert_list(capabilities.extensions, "extensions")?,
            extended_agent_card: capabilities.extended_agent_card,
            extra: Map::new(),
        })
    }
}

impl TryFrom<a2a::StringList> for pb::StringList {
    type Error = ConvertError;

    fn try_from(list: a2a::StringList) -> Result<Self, ConvertError> {
        Ok(Self { list: list.list })
    }
}

impl TryFrom<pb::StringList> for a2a::StringList {
    type Error = ConvertError;

    fn try_from(list: pb::StringList) -> Result<Self, ConvertError> {
        Ok(Self { list: list.list })
    }
}

impl TryFrom<a2a::SecurityRequirement> for pb::SecurityRequirement {
    type Error = ConvertError;

    fn try_from(requirement: a2a::SecurityRequirement) -> Result<Self, ConvertError> {
        Ok(Self { schemes: convert_map(requirement.schemes, "schemes")? })
    }
}

impl TryFrom<pb::SecurityRequirement> for a2a::SecurityRequirement {
    type Error = ConvertError;

    fn try_from(requirement: pb::SecurityRequirement) -> Result<Self, ConvertError> {
        Ok(Self { schemes: convert_map(requirement.schemes, "schemes")? })
    }
}

impl TryFrom<a2a::AgentSkill> for pb::AgentSkill {
    type Error = ConvertError;

    fn try_from(skill: a2a::AgentSkill) -> Result<Self, ConvertError> {
        Ok(Self {
            id: skill.id,
            name: skill.name,
            description: skill.description,
            tags: skill.tags,
            examples: skill.examples,
            input_modes: skill.input_modes,
            output_modes: skill.output_modes,
            security_requirements: convert_list(skill.security_requirements, "securityRequirements")?,
        })
    }
}

impl TryFrom<pb::AgentSkill> for a2a::AgentSkill {
    type Error = ConvertError;

    fn try_from(skill: pb::AgentSkill) -> Result<Self, ConvertError> {
        Ok(Self {
            id: skill.id,
            name: skill.name,
            description: skill.description,
            tags: skill.tags,
            examples: skill.examples,
            input_modes: skill.input_modes,
            output_modes: skill.output_modes,
            security_requirements: convert_list(skill.security_requirements, "securityRequirements")?,
            extra: Map::new(),
        })
    }
}

impl TryFrom<a2a::AgentCardSignature> for pb::AgentCardSignature {
    type Error = ConvertError;

    fn try_from(signature: a2a::AgentCardSignature) -> Result<Self, ConvertError> {
        Ok(Self {
            protected: signature.protected,
            signature: signature.signature,
            header: struct_to_pb(signature.header, "header")?,
        })
    }
}

impl TryFrom<pb::AgentCardSignature> for a2a::AgentCardSignature {
    type Error = ConvertError;

    fn try_from(signature: pb::AgentCardSignature) -> Result<Self, ConvertError> {
        Ok(Self {
            protected: signature.protected,
            signature: signature.signature,
            header: struct_from_pb(signature.header, "header")?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Security schemes.

impl TryFrom<a2a::ApiKeySecurityScheme> for pb::ApiKeySecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: a2a::ApiKeySecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self { description: or_empty(scheme.description), location: scheme.location, name: scheme.name })
    }
}

impl TryFrom<pb::ApiKeySecurityScheme> for a2a::ApiKeySecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: pb::ApiKeySecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self { description: non_empty(scheme.description), location: scheme.location, name: scheme.name })
    }
}

impl TryFrom<a2a::HttpAuthSecurityScheme> for pb::HttpAuthSecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: a2a::HttpAuthSecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self {
            description: or_empty(scheme.description),
            scheme: scheme.scheme,
            bearer_format: or_empty(scheme.bearer_format),
        })
    }
}

impl TryFrom<pb::HttpAuthSecurityScheme> for a2a::HttpAuthSecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: pb::HttpAuthSecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self {
            description: non_empty(scheme.description),
            scheme: scheme.scheme,
            bearer_format: non_empty(scheme.bearer_format),
        })
    }
}

impl TryFrom<a2a::OAuth2SecurityScheme> for pb::OAuth2SecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: a2a::OAuth2SecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self {
            description: or_empty(scheme.description),
            flows: Some(convert(scheme.flows, "flows")?),
            oauth2_metadata_url: or_empty(scheme.oauth2_metadata_url),
        })
    }
}

impl TryFrom<pb::OAuth2SecurityScheme> for a2a::OAuth2SecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: pb::OAuth2SecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self {
            description: non_empty(scheme.description),
            flows: convert_required(scheme.flows, "flows")?,
            oauth2_metadata_url: non_empty(scheme.oauth2_metadata_url),
        })
    }
}

impl TryFrom<a2a::OpenIdConnectSecurityScheme> for pb::OpenIdConnectSecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: a2a::OpenIdConnectSecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self { description: or_empty(scheme.description), open_id_connect_url: scheme.open_id_connect_url })
    }
}

impl TryFrom<pb::OpenIdConnectSecurityScheme> for a2a::OpenIdConnectSecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: pb::OpenIdConnectSecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self { description: non_empty(scheme.description), open_id_connect_url: scheme.open_id_connect_url })
    }
}

impl TryFrom<a2a::MutualTlsSecurityScheme> for pb::MutualTlsSecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: a2a::MutualTlsSecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self { description: or_empty(scheme.description) })
    }
}

impl TryFrom<pb::MutualTlsSecurityScheme> for a2a::MutualTlsSecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: pb::MutualTlsSecurityScheme) -> Result<Self, ConvertError> {
        Ok(Self { description: non_empty(scheme.description) })
    }
}

impl TryFrom<a2a::SecurityScheme> for pb::SecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: a2a::SecurityScheme) -> Result<Self, ConvertError> {
        use pb::security_scheme::Scheme;
        let scheme = match scheme {
            a2a::SecurityScheme::ApiKey(inner) => Scheme::ApiKeySecurityScheme(convert(inner, "apiKeySecurityScheme")?),
            a2a::SecurityScheme::HttpAuth(inner) => {
                Scheme::HttpAuthSecurityScheme(convert(inner, "httpAuthSecurityScheme")?)
            }
            a2a::SecurityScheme::OAuth2(inner) => Scheme::Oauth2SecurityScheme(convert(inner, "oauth2SecurityScheme")?),
            a2a::SecurityScheme::OpenIdConnect(inner) => {
                Scheme::OpenIdConnectSecurityScheme(convert(inner, "openIdConnectSecurityScheme")?)
            }
            a2a::SecurityScheme::MutualTls(inner) => Scheme::MtlsSecurityScheme(convert(inner, "mtlsSecurityScheme")?),
        };
        Ok(Self { scheme: Some(scheme) })
    }
}

impl TryFrom<pb::SecurityScheme> for a2a::SecurityScheme {
    type Error = ConvertError;

    fn try_from(scheme: pb::SecurityScheme) -> Result<Self, ConvertError> {
        use pb::security_scheme::Scheme;
        Ok(match scheme.scheme {
            Some(Scheme::ApiKeySecurityScheme(inner)) => Self::ApiKey(convert(inner, "apiKeySecurityScheme")?),
            Some(Scheme::HttpAuthSecurityScheme(inner)) => Self::HttpAuth(convert(inner, "httpAuthSecurityScheme")?),
            Some(Scheme::Oauth2SecurityScheme(inner)) => Self::OAuth2(convert(inner, "oauth2SecurityScheme")?),
            Some(Scheme::OpenIdConnectSecurityScheme(inner)) => {
                Self::OpenIdConnect(convert(inner, "openIdConnectSecurityScheme")?)
            }
            Some(Scheme::MtlsSecurityScheme(inner)) => Self::MutualTls(convert(inner, "mtlsSecurityScheme")?),
            None => {
                return Err(ConvertError::new(
                    "scheme",
                    "must be set: one of apiKeySecurityScheme, httpAuthSecurityScheme, oauth2SecurityScheme, \
                     openIdConnectSecurityScheme, mtlsSecurityScheme",
                ));
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// OAuth flows.

impl TryFrom<a2a::AuthorizationCodeOAuthFlow> for pb::AuthorizationCodeOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: a2a::AuthorizationCodeOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            authorization_url: flow.authorization_url,
            token_url: flow.token_url,
            refresh_url: or_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
            pkce_required: flow.pkce_required.unwrap_or(false),
        })
    }
}

impl TryFrom<pb::AuthorizationCodeOAuthFlow> for a2a::AuthorizationCodeOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: pb::AuthorizationCodeOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            authorization_url: flow.authorization_url,
            token_url: flow.token_url,
            refresh_url: non_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
            pkce_required: true_or_none(flow.pkce_required),
        })
    }
}

impl TryFrom<a2a::ClientCredentialsOAuthFlow> for pb::ClientCredentialsOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: a2a::ClientCredentialsOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            token_url: flow.token_url,
            refresh_url: or_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<pb::ClientCredentialsOAuthFlow> for a2a::ClientCredentialsOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: pb::ClientCredentialsOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            token_url: flow.token_url,
            refresh_url: non_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<a2a::ImplicitOAuthFlow> for pb::ImplicitOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: a2a::ImplicitOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            authorization_url: or_empty(flow.authorization_url),
            refresh_url: or_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<pb::ImplicitOAuthFlow> for a2a::ImplicitOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: pb::ImplicitOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            authorization_url: non_empty(flow.authorization_url),
            refresh_url: non_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<a2a::PasswordOAuthFlow> for pb::PasswordOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: a2a::PasswordOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            token_url: or_empty(flow.token_url),
            refresh_url: or_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<pb::PasswordOAuthFlow> for a2a::PasswordOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: pb::PasswordOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            token_url: non_empty(flow.token_url),
            refresh_url: non_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<a2a::DeviceCodeOAuthFlow> for pb::DeviceCodeOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: a2a::DeviceCodeOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            device_authorization_url: flow.device_authorization_url,
            token_url: flow.token_url,
            refresh_url: or_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<pb::DeviceCodeOAuthFlow> for a2a::DeviceCodeOAuthFlow {
    type Error = ConvertError;

    fn try_from(flow: pb::DeviceCodeOAuthFlow) -> Result<Self, ConvertError> {
        Ok(Self {
            device_authorization_url: flow.device_authorization_url,
            token_url: flow.token_url,
            refresh_url: non_empty(flow.refresh_url),
            scopes: flow.scopes.into_iter().collect(),
        })
    }
}

impl TryFrom<a2a::OAuthFlows> for pb::OAuthFlows {
    type Error = ConvertError;

    // Implicit and password are deprecated by the specification but still part of it.
    #[allow(deprecated)]
    fn try_from(flows: a2a::OAuthFlows) -> Result<Self, ConvertError> {
        use pb::o_auth_flows::Flow;
        let flow = match flows {
            a2a::OAuthFlows::AuthorizationCode(flow) => Flow::AuthorizationCode(convert(flow, "authorizationCode")?),
            a2a::OAuthFlows::ClientCredentials(flow) => Flow::ClientCredentials(convert(flow, "clientCredentials")?),
            a2a::OAuthFlows::Implicit(flow) => Flow::Implicit(convert(flow, "implicit")?),
            a2a::OAuthFlows::Password(flow) => Flow::Password(convert(flow, "password")?),
            a2a::OAuthFlows::DeviceCode(flow) => Flow::DeviceCode(convert(flow, "deviceCode")?),
        };
        Ok(Self { flow: Some(flow) })
    }
}

impl TryFrom<pb::OAuthFlows> for a2a::OAuthFlows {
    type Error = ConvertError;

    // Implicit and password are deprecated by the specification but still part of it.
    #[allow(deprecated)]
    fn try_from(flows: pb::OAuthFlows) -> Result<Self, ConvertError> {
        use pb::o_auth_flows::Flow;
        Ok(match flows.flow {
            Some(Flow::AuthorizationCode(flow)) => Self::AuthorizationCode(convert(flow, "authorizationCode")?),
            Some(Flow::ClientCredentials(flow)) => Self::ClientCredentials(convert(flow, "clientCredentials")?),
            Some(Flow::Implicit(flow)) => Self::Implicit(convert(flow, "implicit")?),
            Some(Flow::Password(flow)) => Self::Password(convert(flow, "password")?),
            Some(Flow::DeviceCode(flow)) => Self::DeviceCode(convert(flow, "deviceCode")?),
            None => {
                return Err(ConvertError::new(
                    "flow",
                    "must be set: one of authorizationCode, clientCredentials, implicit, password, deviceCode",
                ));
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The card.

impl TryFrom<a2a::AgentCard> for pb::AgentCard {
    type Error = ConvertError;

    fn try_from(card: a2a::AgentCard) -> Result<Self, ConvertError> {
        Ok(Self {
            name: card.name,
            description: card.description,
            supported_interfaces: convert_list(card.supported_interfaces, "supportedInterfaces")?,
            provider: convert_opt(card.provider, "provider")?,
            version: card.version,
            documentation_url: card.documentation_url,
            capabilities: Some(convert(card.capabilities, "capabilities")?),
            security_schemes: convert_map(card.security_schemes, "securitySchemes")?,
            security_requirements: convert_list(card.security_requirements, "securityRequirements")?,
            default_input_modes: card.default_input_modes,
            default_output_modes: card.default_output_modes,
            skills: convert_list(card.skills, "skills")?,
            signatures: convert_list(card.signatures, "signatures")?,
            icon_url: card.icon_url,
        })
    }
}

impl TryFrom<pb::AgentCard> for a2a::AgentCard {
    type Error = ConvertError;

    fn try_from(card: pb::AgentCard) -> Result<Self, ConvertError> {
        Ok(Self {
            name: card.name,
            description: card.description,
            supported_interfaces: convert_list(card.supported_interfaces, "supportedInterfaces")?,
            provider: convert_opt(card.provider, "provider")?,
            version: card.version,
            documentation_url: card.documentation_url,
            // Every field of the capabilities is optional: an absent message says no more than an
            // empty one.
            capabilities: convert_opt(card.capabilities, "capabilities")?.unwrap_or_default(),
            security_schemes: convert_map(card.security_schemes, "securitySchemes")?,
            security_requirements: convert_list(card.security_requirements, "securityRequirements")?,
            default_input_modes: card.default_input_modes,
            default_output_modes: card.default_output_modes,
            skills: convert_list(card.skills, "skills")?,
            signatures: convert_list(card.signatures, "signatures")?,
            icon_url: card.icon_url,
            extra: Map::new(),
        })
    }
}
